"""The CTranslate2 adapter (``ct2:``) on a tiny random model: conversion, batching, stops, errors.

Real CTranslate2 (the ``local`` extra) on a real converted model; greedy float32 output is
compared with plain transformers', token for token.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("ctranslate2")

from frontier_qa.adapters import create_adapter  # noqa: E402
from frontier_qa.adapters._ct2_adapter import CT2Adapter, _Row, ct2_folder, length_buckets, static_prefix  # noqa: E402
from frontier_qa.errors import ConfigError, MissingExtraError  # noqa: E402
from frontier_qa.runtime._local_models import MARKER  # noqa: E402
from frontier_qa.target import Case, Sampling  # noqa: E402
from tests.adapters.test_hf import greedy_twice, reference_greedy  # noqa: E402
from tests.factories import run  # noqa: E402
from tests.tiny_models import build_tiny_model  # noqa: E402

CASE = Case(id="add", prompt="What is 2+3?")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-ct2") / "tiny")


@pytest.fixture(scope="module")
def exact(tiny: Path):
    ct2 = CT2Adapter(tiny, quantization="float32", batch_wait_s=0.05)
    yield ct2
    asyncio.run(ct2.aclose())


def test_converts_once_beside_the_model_and_names_its_engine(exact: CT2Adapter, tiny: Path) -> None:
    out = run(exact.generate(CASE, 1, Sampling(temperature=0.0, max_tokens=4)))
    folder = tiny.with_name("tiny-ct2-float32")
    assert (folder / MARKER).is_file() and (folder / "model" / "model.bin").is_file()
    stamp = (folder / MARKER).stat().st_mtime_ns
    assert ct2_folder(tiny, "float32") == folder and (folder / MARKER).stat().st_mtime_ns == stamp  # not rebuilt
    assert exact.id == f"ct2:{tiny.resolve()}?quantization=float32"
    assert out[0].ok and out[0].usage.prompt_tokens > 0


def test_greedy_float32_matches_plain_transformers(exact: CT2Adapter, tiny: Path) -> None:
    first, new = greedy_twice(exact, tiny)
    assert first.usage.completion_tokens == len([t for t in new if t != exact.tokenizer.eos_token_id])


def test_a_prefilled_reply_is_continued(exact: CT2Adapter, tiny: Path) -> None:
    opened = Case(id="pre", prompt="What is 2+3?", history=({"role": "assistant", "content": "The answer"},))
    text, _, _ = reference_greedy(tiny, list(opened.messages), 8, prefill=True)
    (out,) = run(exact.generate(opened, 1, Sampling(temperature=0.0, max_tokens=8)))
    assert out.text == text
    assert out.messages[-1]["content"] == "The answer" + text


def test_rows_of_one_batch_keep_their_own_max_tokens_and_stop_strings(exact: CT2Adapter) -> None:
    free = run(exact.generate(CASE, 1, Sampling(temperature=0.0, max_tokens=20)))[0].text
    assert len(free) > 3
    stop = free[2:4]  # a string the greedy reply is known to contain

    async def together():
        return await asyncio.gather(
            exact.generate(CASE, 1, Sampling(temperature=0.0, max_tokens=20, stop=(stop,))),
            exact.generate(CASE, 1, Sampling(temperature=0.0, max_tokens=3)),
            exact.generate(CASE, 1, Sampling(temperature=0.0, max_tokens=20)),
        )

    calls = exact.generate_calls
    stopped, short, whole = run(together())
    assert exact.generate_calls - calls == 1  # one batch: same prompt, same temperature
    assert stopped[0].text == free[: free.index(stop)]
    assert short[0].usage.completion_tokens <= 3
    assert whole[0].text == free


def test_sampled_rows_differ_and_are_numbered_from_start(exact: CT2Adapter) -> None:
    # CTranslate2 cannot seed its sampler (module doc): what holds is that rows are independent
    # draws, numbered from ``start``, each within its max tokens
    later = run(exact.generate(CASE, 4, Sampling(temperature=1.0, max_tokens=12, seed=5), start=3))
    assert [t.sample_index for t in later] == [3, 4, 5, 6]
    assert len({t.text for t in later}) > 1  # a random model at T=1 does not repeat itself
    assert all(1 <= t.usage.completion_tokens <= 12 for t in later)


def test_length_buckets_keep_long_prompts_away_from_short_ones() -> None:
    def row(length: int, temperature: float = 0.5) -> _Row:
        return _Row(list(range(length)), temperature, 1.0, 8, ())

    rows = [row(100), row(700), row(150), row(705), row(100, temperature=0.0), row(300)]
    buckets = length_buckets(rows, max_rows=8)
    assert sorted(map(sorted, buckets)) == [[0, 2], [1, 3], [4], [5]]
    assert sorted(map(sorted, length_buckets(rows, max_rows=8, slack=16))) == [[0], [1, 3], [2], [4], [5]]
    assert length_buckets([row(10)] * 5, max_rows=2) == [[0, 1], [2, 3], [4]]


def test_the_static_prefix_is_the_shared_turns_and_leaves_each_prompt_a_token() -> None:
    end, nl = 2, 10  # 2 ends a turn; 10 is the newline after it
    system = [1, 5, 6, 7, 8, 9, 11, 12, 13, end, nl]
    a, b = [*system, 1, 20, 21, 22], [*system, 1, 20, 30]
    assert static_prefix([a, b], frozenset({end})) == len(system)  # not into the shared "1, 20" of the next turn
    assert static_prefix([a, a], frozenset({end})) == len(system)  # one prompt: still cut at a turn's end
    assert static_prefix([system, system], frozenset({end})) == len(system) - 1  # a token of its own is left
    assert static_prefix([[1, 5, end, nl, 3], [1, 5, end, nl, 4]], frozenset({end})) == 0  # too short to cache
    assert static_prefix([[9, *system], a], frozenset({end})) == 0  # nothing shared


def test_prompts_sharing_a_system_turn_give_what_they_give_alone(exact: CT2Adapter, tiny: Path) -> None:
    system = "You are a careful assistant. Answer with one number, then stop. " * 2
    cases = [Case(id=f"s{i}", prompt=f"What is {i}+{i}?", system=system) for i in range(3)]
    alone = [run(exact.generate(c, 1, Sampling(temperature=0.0, max_tokens=10)))[0].text for c in cases]

    async def together():
        return await asyncio.gather(*(exact.generate(c, 1, Sampling(temperature=0.0, max_tokens=10)) for c in cases))

    assert [out[0].text for out in run(together())] == alone
    assert alone[0] == reference_greedy(tiny, list(cases[0].messages), 10)[0]


def test_threads_fit_the_cores_other_processes_leave_free(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import frontier_qa.adapters._ct2_adapter as ct2_module

    busy = [64]  # threads of other processes running: more than this machine's cores
    monkeypatch.setattr(ct2_module, "others_running", lambda: busy[0])
    monkeypatch.setattr(ct2_module, "REFIT_S", 0.0)
    monkeypatch.delenv("FRONTIER_QA_CPU_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    adapter = CT2Adapter(tiny, quantization="float32")
    try:
        greedy = Sampling(temperature=0.0, max_tokens=4)
        first = run(adapter.generate(CASE, 1, greedy))[0].text
        assert adapter.threads == 1  # a loaded machine: one thread, no barrier waits on descheduled ones
        busy[0] = 0
        again = run(adapter.generate(CASE, 1, greedy))[0].text
        assert adapter.threads == (os.cpu_count() or 1)  # reopened with every core once they are free
        assert again == first  # the same model, greedy: the same text
    finally:
        asyncio.run(adapter.aclose())
    monkeypatch.setenv("FRONTIER_QA_CPU_THREADS", "1")
    assert CT2Adapter(tiny, quantization="float32").fixed_threads == 1


def test_spec_options_and_errors(tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError) as info:
        create_adapter(f"ct2:{tiny}", beams=3)
    assert "unknown option(s) beams for target 'ct2:" in str(info.value)
    with pytest.raises(ConfigError) as info:
        CT2Adapter(tmp_path / "nowhere")
    assert "has no config.json" in str(info.value) and "ct2:smollm2" in str(info.value.hint)
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # as if the extra were not installed
    with pytest.raises(MissingExtraError) as missing:
        CT2Adapter(tiny)
    assert "local" in str(missing.value)
