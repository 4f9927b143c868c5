"""The GPU validation is ready for a lent machine before any device time is spent (issue 25).

The machine (benchmarks/gpu/device-packages.txt) reaches no registry and no model hub. Here:

* the carry set (``prepare.sh``): exactly the pinned wheels, cp312 manylinux, ≤ 60 MiB, every
  declared requirement met by the set or by the machine's list (registry needed: this test fails,
  never skips, without one);
* a Python 3.12 stand-in of the machine: the carried wheels installed with the machine's own
  command (``install.sh``) beside the machine's small packages (real wheels) and stub metadata for
  its big ones at their recorded versions (torch, transformers...), then every carried package and
  the torch-free frontier_qa code the validation uses imported and run there;
* the CPU dry run (``run.sh --dry``): everything but the GPU, with only the machine's packages and
  the carried ones importable (``device_sim.py``) and the machine's transformers swapped in.

What these cannot show: CUDA code paths, the machine's real versions where they were never recorded
(reported as *assumed*), and torch 2.11 (the host's torch runs the dry run).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.factories import REPO

GPU = REPO / "benchmarks" / "gpu"
sys.path.insert(0, str(GPU))
import carry  # noqa: E402
import random_models  # noqa: E402

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
       "TOKENIZERS_PARALLELISM": "false", "PYTHON": sys.executable, "PYTHONPATH": str(REPO)}

# The machine's small packages the 3.12 stand-in imports for real. typing-extensions sits at the
# floor the carried pydantic declares (its version there is unrecorded: the riskiest assumption);
# numpy at the machine's recorded version; the rest as the registry serves them.
STANDIN_WHEELS = ("typing-extensions==4.14.1", "numpy==2.5.2", "pyyaml", "regex", "click", "joblib", "tqdm",
                  "packaging")


def run(cmd: list[str], timeout: float, env: dict[str, str] | None = None,
        cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env or ENV, capture_output=True, text=True, timeout=timeout)


def prepared(folder: Path, *args: str) -> Path:
    """``prepare.sh [args] folder``; a failure (no registry, a bad pin) fails the test with its output."""
    done = run(["bash", "benchmarks/gpu/prepare.sh", *args, str(folder)], timeout=600)
    assert done.returncode == 0, f"prepare.sh {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return folder


@pytest.fixture(scope="module")
def carry_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepared(tmp_path_factory.mktemp("carry") / "whl")


def python312() -> str:
    """A working CPython 3.12 (pyenv's first: its shim on PATH may point at another version)."""
    candidates = [*map(str, sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))),
                  shutil.which("python3.12") or ""]
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"],
                               capture_output=True, timeout=60)
        if probe.returncode == 0:
            return candidate
    pytest.fail("no working Python 3.12 here (~/.pyenv/versions/3.12*, python3.12 on PATH): the stand-in of the GPU "
                "machine's Python cannot be built; install one (pyenv install 3.12)")


# --- the carry set --------------------------------------------------------------------------------


@pytest.mark.slow
def test_carry_set_is_exactly_the_pins_under_60_mib_and_complete(carry_set: Path) -> None:
    found = json.loads((carry_set / "carry-check.json").read_text())
    assert found["ok"], found["problems"]
    pins = carry.read_list(carry.CARRY)
    assert {w["name"]: w["version"] for w in found["wheels"]} == pins
    assert 0 < found["total_mib"] <= 60
    assert found["total_mib"] == pytest.approx(sum(w.stat().st_size for w in carry_set.glob("*.whl")) / 2**20, abs=0.01)
    device = carry.read_list(carry.DEVICE)
    assert not set(pins) & set(device)  # nothing of the machine's is shadowed (torch, transformers, peft...)
    assert not {"litellm", "openai", "vllm", "torch", "transformers"} & set(pins)
    # the requirements that matter most are checked against the machine's recorded versions
    assert "trl 1.16.0 needs transformers>=4.56.2: transformers 5.17.0" in found["verified"]
    assert "trl 1.16.0 needs accelerate>=1.10.1: accelerate 1.15.0" in found["verified"]
    assert "datasets 5.0.1 needs huggingface-hub<2.0,>=0.25.0: huggingface-hub 1.33.0" in found["verified"]
    assert any(line.startswith("datasets 5.0.1 needs pyarrow>=21.0.0") for line in found["assumed"])
    compiled = [w["file"] for w in found["wheels"] if "-cp312-" in w["file"]]
    assert compiled and all("manylinux" in f and f.endswith("x86_64.whl") for f in compiled)


@pytest.mark.slow
def test_carried_wheels_install_and_import_on_a_python_312_stand_in(carry_set: Path, tmp_path: Path) -> None:
    py = python312()
    venv = tmp_path / "venv"
    assert run([py, "-m", "venv", str(venv)], timeout=120).returncode == 0
    vpy = str(venv / "bin" / "python")
    dest = tmp_path / "machine"
    # the carried wheels, with the machine's own install command
    done = run(["bash", "benchmarks/gpu/install.sh", str(carry_set), str(dest)], timeout=300, env={**ENV, "PYTHON": vpy})
    assert done.returncode == 0, done.stderr
    pythonpath = re.fullmatch(r"export PYTHONPATH=(\S+)\n", done.stdout)
    assert pythonpath is not None, done.stdout
    # the machine's small packages for real; its big ones as metadata at their recorded versions
    standins = tmp_path / "standins"
    done = run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
                "3.12", "--implementation", "cp", *[a for p in carry.PLATFORMS for a in ("--platform", p)], "-d",
                str(standins), *STANDIN_WHEELS], timeout=600)
    assert done.returncode == 0, f"pip download of the stand-ins failed (is a registry in reach?):\n{done.stderr}"
    machine_site = venv / "lib" / "python3.12" / "site-packages"
    done = run([vpy, "-m", "pip", "install", "-q", "--no-index", "--no-deps", *map(str, standins.glob("*.whl"))],
               timeout=300)
    assert done.returncode == 0, done.stderr
    real = {carry.canonicalize_name(p.split("==")[0]) for p in STANDIN_WHEELS}
    for name, version in carry.read_list(carry.DEVICE).items():
        if version is not None and name not in real:
            info = machine_site / f"{name.replace('-', '_')}-{version}.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
            (info / "RECORD").write_text("")

    texts = ["what is the sum of 3 and 4", "what is the sum of 3 and 5", "name a prime above 10"]
    sets = [f"--set={s}" for s in load_validation_settings()]
    # datasets needs pyarrow and pandas (the machine's, 60 MB of wheels here): the dry run imports it
    probe = """
import importlib.metadata as m, json, sys
import pydantic, pydantic_core, annotated_types, typing_inspection, tenacity, dill, multiprocess, defusedxml
from nltk.translate.bleu_score import sentence_bleu
import trl  # its import-time checks read the stand-in metadata: transformers 5.17.0
"""
    probe += f"""
from frontier_qa.config import parse_set
from frontier_qa.scoring._repetition import bleu_distance_matrix
from frontier_qa.train._coevolve_config import load_coevolve_config
config = load_coevolve_config({str(REPO / 'configs' / 'coevolve' / 'agent0.yaml')!r},
                              [parse_set(a.removeprefix('--set=')) for a in sys.argv[1:]])
print(json.dumps({{
    "python": sys.version.split()[0],
    "versions": {{d: m.version(d) for d in ("pydantic", "pydantic-core", "trl", "nltk", "typing-extensions",
                                            "transformers", "torch")}},
    "files": {{"pydantic": pydantic.__file__, "trl": trl.__file__, "frontier_qa": sys.modules["frontier_qa"].__file__}},
    "curriculum_prompts": config.curriculum.training.prompts_per_step,
    "executor_sampler": config.executor.sampler,
    "executor_batch_rows": config.executor.target_options["max_batch_rows"],
    "bleu": bleu_distance_matrix({texts!r}).tolist(),
}}))
"""
    done = run([vpy, "-c", probe, *sets], timeout=300, cwd=tmp_path,  # not the checkout: `-c` puts the cwd first
               env={**ENV, "PYTHONPATH": pythonpath.group(1), "PYTHONNOUSERSITE": "1"})
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["python"].startswith("3.12.")
    assert got["versions"] == {"pydantic": "2.13.5", "pydantic-core": "2.46.5", "trl": "1.16.0", "nltk": "3.10.4",
                               "typing-extensions": "4.14.1", "transformers": "5.17.0", "torch": "2.11.0"}
    site = str(dest / "site")
    assert got["files"]["pydantic"].startswith(site) and got["files"]["trl"].startswith(site)
    assert got["files"]["frontier_qa"].startswith(str(dest / "layout"))
    assert (got["curriculum_prompts"], got["executor_sampler"], got["executor_batch_rows"]) == (4, "transformers", 128)
    from frontier_qa.scoring._repetition import bleu_distance_matrix

    here = bleu_distance_matrix(texts).tolist()
    assert [v for row in got["bleu"] for v in row] == pytest.approx([v for row in here for v in row], abs=1e-12)
    assert 0 < got["bleu"][0][1] < got["bleu"][0][2] == 1.0


def load_validation_settings() -> list[str]:
    """What ``gpu_validation.py --random qwen3-1.7b`` sets (model folder made up: loading does not open it)."""
    from tests.factories import load_benchmark

    return load_benchmark("gpu_validation").random_settings(Path("/models/qwen3-1.7b"))


# --- the CPU dry run of run.sh ----------------------------------------------------------------------


@pytest.mark.slow
def test_dry_run_does_everything_but_the_gpu(tmp_path: Path) -> None:
    wheels = prepared(tmp_path / "host-wheels", "--host")
    out = tmp_path / "out"
    done = run(["bash", "benchmarks/gpu/run.sh", "--dry"], timeout=900,
               env={**ENV, "OUT": str(out), "FQA_WHEELS": str(wheels)})
    log = (out / "run.log").read_text()
    assert done.returncode == 0, log[-6000:]
    assert sorted(p.name for p in out.iterdir()) == ["device.json", "imports.json", "pip-freeze.txt", "run.log",
                                                     "validation-tiny.json", "validation.md"]
    assert re.search(r"^\[\d\d:\d\d:\d\d \+\d+s\] 4/4 validation", log, re.M)  # a cut-off run shows where it was
    assert "torch==" in (out / "pip-freeze.txt").read_text()

    device = json.loads((out / "device.json").read_text())
    assert device["carry"]["ok"], device["carry"]["problems"]
    pins = carry.read_list(carry.CARRY)
    assert set(device["carry"]["locations"]) == set(pins)
    assert all(where.endswith("/site") for where in device["carry"]["locations"].values())  # the carried copies ran
    assert device["carry"]["machine_versions"]["transformers"] == "5.17.0"  # the machine's, swapped in
    assert device["smoke"]["cuda"] is False and device["smoke"]["bf16_tflops"] > 0

    imports = json.loads((out / "imports.json").read_text())
    imported = set(imports["imported"])
    assert set(pins) <= imported  # every carried distribution is needed: the set holds nothing extra
    allowed = set(imports["allowed"])
    assert all(set(owners) & allowed for owners in imports["modules"].values())  # each import the machine has
    assert not {"litellm", "openai", "vllm", "math-verify"} & imported

    report = json.loads((out / "validation-tiny.json").read_text())
    assert report["weights"] == "random" and "speed and memory only" in report["note"]
    assert report["versions"]["transformers"] == "5.17.0" and report["versions"]["trl"] == "1.16.0"
    built = report["model"]
    assert built["size"]["vocab"] == 2048 and built["parameters"] == tiny_parameters()
    c = report["curriculum"]["steps"]
    assert [s["step"] for s in c] == [1, 2, 3]
    for s in (c[0], c[2]):  # the rounds of generation: the executor sampled every task
        assert s["generation_s"] > 0 and s["sampling_s"] > 0 and s["tokens_per_s"] > 0
        # 2 prompts × 4 tasks × 2 updates a round × 16 tokens: random weights run every completion to its limit
        assert s["generated_tokens"] == 2 * 4 * 2 * 16
    assert c[1]["clip_region"] is not None
    speed = report["speed_vs_plain_grpo"]
    assert speed["speed"] > 0 and speed["goal"] == 0.95
    e = report["executor"]
    assert [s["step"] for s in e["steps"]] == [1, 2, 3] and e["steps"][0]["tool_rollout_s"] > 0
    assert e["tasks_source"] == "in band" or "outside the band" in e["tasks_source"]
    assert all(s["clip_region"] is not None for s in e["steps"])
    table = (out / "validation.md").read_text()
    assert "## tiny" in table and "| curriculum | 3 |" in table and "| executor | 3 |" in table
    assert "speed vs plain TRL GRPOTrainer" in table and "speed and memory only" in table


def tiny_parameters() -> int:
    """``random_models.SIZES['tiny']``'s parameter count from its shape (tied embeddings)."""
    s = random_models.SIZES["tiny"]
    attention = s.hidden * s.heads * s.head_dim * 2 + s.hidden * s.kv_heads * s.head_dim * 2 + 2 * s.head_dim
    layer = attention + 3 * s.hidden * s.intermediate + 2 * s.hidden
    return s.vocab * s.hidden + s.layers * layer + s.hidden


# --- the pieces, without a registry -----------------------------------------------------------------


def fake_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = (),
               tag: str = "py3-none-any", pad: int = 0) -> Path:
    """A wheel file with just its METADATA (``pad`` bytes of stored filler make it that large)."""
    path = folder / f"{name.replace('-', '_')}-{version}-{tag}.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n"
                                                                                   for r in requires)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{name.replace('-', '_')}-{version}.dist-info/METADATA", meta)
        if pad:
            archive.writestr("filler.bin", os.urandom(pad))
    return path


def test_requirement_check_sorts_verified_assumed_tolerated_and_problems() -> None:
    carried = [carry.Dist("trl", "1.16.0", ("transformers>=4.56.2", "pyarrow>=21", "accelerate>=9",
                                            "liger-kernel; extra == 'liger'", "pywin32; sys_platform == 'win32'")),
               carry.Dist("datasets", "5.0.1", ("fsspec<=2026.6.0", "dill<0.4.2", "nosuchpackage")),
               carry.Dist("dill", "0.4.1"),
               carry.Dist("old", "1.0", (), requires_python="<3.12")]
    found = carry.check_requirements(carried, {"transformers": "5.17.0", "pyarrow": None, "accelerate": "1.15.0",
                                               "fsspec": "2026.9.0"})
    assert found.verified == ["trl 1.16.0 needs transformers>=4.56.2: transformers 5.17.0",
                              "datasets 5.0.1 needs dill<0.4.2: dill 0.4.1"]
    assert found.assumed == ["trl 1.16.0 needs pyarrow>=21: the machine has pyarrow, version unrecorded"]
    assert len(found.tolerated) == 1 and found.tolerated[0].startswith("datasets 5.0.1 needs fsspec<=2026.6.0")
    assert found.problems == ["trl 1.16.0 needs accelerate>=9: accelerate is 1.15.0",
                              "datasets 5.0.1 needs nosuchpackage: neither carried nor on the machine",
                              "old 1.0 needs Python <3.12, not 3.12.3"]


def test_folder_check_refuses_shadowing_unpinned_wrong_tag_and_oversize(tmp_path: Path) -> None:
    fake_wheel(tmp_path, "tenacity", "9.2.1")
    fake_wheel(tmp_path, "transformers", "5.23.0")  # the machine's own: would shadow it
    fake_wheel(tmp_path, "extra-thing", "1.0")
    fake_wheel(tmp_path, "pydantic-core", "2.46.5", tag="cp311-cp311-manylinux_2_17_x86_64")
    fake_wheel(tmp_path, "big", "1.0", pad=2 * 2**20)
    pins = {"tenacity": "9.2.1", "pydantic-core": "2.46.5", "big": "1.0", "nltk": "3.10.4", "transformers": "5.23.0"}
    found = carry.check_folder(tmp_path, pins, {"transformers": "5.17.0"}, limit_mib=1)
    problems = "\n".join(found["problems"])
    assert not found["ok"]
    assert "transformers-5.23.0-py3-none-any.whl: the machine has transformers already" in problems
    assert "extra_thing-1.0-py3-none-any.whl: not pinned in carry.txt" in problems
    assert "pydantic_core-2.46.5-cp311-cp311-manylinux_2_17_x86_64.whl: no tag CPython 3.12.3" in problems
    assert "nltk==3.10.4 is pinned but no wheel of it is in" in problems
    assert "over the 1 MiB limit" in problems
    assert found["total_mib"] >= 2
    fine = tmp_path / "fine"
    fine.mkdir()
    fake_wheel(fine, "tenacity", "9.2.1")
    assert carry.check_folder(fine, {"tenacity": "9.2.1"}, {})["ok"]


def test_device_list_records_the_versions_the_carry_set_is_checked_against() -> None:
    device = carry.read_list(carry.DEVICE)
    assert {k: device[k] for k in ("torch", "transformers", "accelerate", "huggingface-hub", "tokenizers")} == {
        "torch": "2.11.0", "transformers": "5.17.0", "accelerate": "1.15.0", "huggingface-hub": "1.33.0",
        "tokenizers": "0.23.2"}
    assert "peft" in device and "pyarrow" in device and "trl" not in device and "pydantic" not in device


@pytest.mark.parametrize("size", [151_936, 2048, 259])
def test_made_bpe_vocabulary_has_the_exact_size_and_valid_merges(size: int) -> None:
    vocab, merges = random_models.bpe_vocab(size)
    assert len(vocab) == size - len(random_models.SPECIAL_TOKENS)
    assert sorted(vocab.values()) == list(range(len(vocab)))
    assert len(merges) == len(vocab) - 256
    assert all(left in vocab and right in vocab and vocab[left + right] > max(vocab[left], vocab[right])
               for left, right in merges)


def test_qwen3_sizes_are_the_published_shapes() -> None:
    assert random_models.SIZES["qwen3-0.6b"] == random_models.Size(1024, 28, 16, 8, 128, 3072, 151_936)
    assert random_models.SIZES["qwen3-1.7b"] == random_models.Size(2048, 28, 16, 8, 128, 6144, 151_936)
    with pytest.raises(ValueError, match="cannot be built"):
        random_models.bpe_vocab(100)
