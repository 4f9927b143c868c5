"""Prompted curricula: templates, parsers, Tool-R0 tasks, in-context history, determinism.

The curriculum model is a scripted adapter (a real :class:`~frontier_qa.target.Adapter` whose
output is a function of the request) opened through the real runtime (``open_target``), so
the requests the curriculum sends are exactly what a model would receive.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from frontier_qa.curricula import _templates as tpl
from frontier_qa.curricula._prompted import (
    DEFAULT_SAMPLING,
    PromptedCurriculum,
    derive_seed,
    from_spec,
    sample_tool_spec,
)
from frontier_qa.errors import ConfigError
from frontier_qa.probing._curriculum_seam import Curriculum, Outcome, Proposal
from frontier_qa.runtime import open_target
from frontier_qa.target import Adapter, Case, Sampling, Trajectory
from tests.factories import run

Reply = Callable[[Case, Sampling], "str | None"]


class Scripted(Adapter):
    """A curriculum model whose text is ``reply(case, sampling)``; it records every request."""

    max_n = 1

    def __init__(self, reply: Reply, id: str = "scripted") -> None:
        self.id = id
        self.reply = reply
        self.requests: list[tuple[Case, Sampling]] = []

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        self.requests.append((case, sampling))
        out = []
        for j in range(n):
            text = self.reply(case, sampling)
            out.append(Trajectory(text=text, error=None if text is not None else "scripted: no text",
                                  sample_index=start + j))
        return out


def scripted(reply: Reply | str, **kwargs: object) -> tuple[Scripted, object]:
    adapter = Scripted(reply if callable(reply) else (lambda case, sampling: reply))
    return adapter, open_target(adapter, cache=kwargs.pop("cache", False))  # type: ignore[arg-type]


def scripted_agent(case: Case) -> str:
    """A python: agent for :func:`from_spec` (``python:<this file>:scripted_agent``)."""
    return "<question>What is 2 + 2?</question>\n\\boxed{4}"


MATH_REPLY = (
    "<question>\nFind the product of 6 and 7.\n</question>\n\n\\boxed{42}\n\n"
    "```python\nprint(6 * 7)\n```\n<difficulty_prediction>6</difficulty_prediction>"
)


def tool(name: str, description: str, **params: str) -> dict[str, object]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {p: {"type": t} for p, t in params.items()},
                       "required": list(params)}}}


SEARCH = tool("search_orders", "Find a customer's orders", customer_email="string")
REFUND = tool("refund", "Refund an order", order_id="string", amount="number")
WEATHER = tool("get_weather", "Current weather", city="string")


# ------------------------------------------------------------------------ reasoning domain


def test_agent0_table7_prompt_is_reproduced_exactly_without_additions() -> None:
    adapter, model = scripted(MATH_REPLY)
    curriculum = PromptedCurriculum(model, domain="math", ask_solution=False, ask_difficulty=False)
    run(curriculum.propose(1))
    request, sampling = adapter.requests[0]
    assert request.system == (
        "You are an expert competition-math problem setter.\n"
        "FIRST, in your private scratch-pad, think step-by-step to design a brand-new, non-trivial problem. "
        "The problem could come from any field of mathematics, including but not limited to algebra, geometry, "
        "number theory, combinatorics, prealgebra, probability, statistics, and calculus. Aim for a difficulty "
        "such that fewer than 30% of advanced high-school students could solve it. Avoid re-using textbook "
        "cliches or famous contest problems.\nTHEN, without revealing any of your private thoughts, output "
        "exactly the following two blocks:\n\n<question>\n{The full problem statement on one or more lines}\n"
        "</question>\n\n\\boxed{final answer}\n\nDo NOT output anything else—no explanations, no extra markup."
    )
    assert request.prompt == ("Generate one new, challenging reasoning question now. "
                              "Remember to format the output exactly as instructed.")
    # Agent0 A.1: temperature 1.0, top-p 0.99; the seed is the derived one.
    assert (sampling.temperature, sampling.top_p) == (1.0, 0.99)
    assert sampling.seed == derive_seed(0, 0, 0)


def test_math_proposal_carries_reference_solution_and_difficulty() -> None:
    adapter, model = scripted(MATH_REPLY)
    curriculum = PromptedCurriculum(model, domain="math", topics=["number theory"])
    [proposal] = run(curriculum.propose(1))
    system = adapter.requests[0][0].system or ""
    assert "The problem must be about number theory." in system
    assert "```python" in system and "<difficulty_prediction>" in system
    case = proposal.case
    assert case.prompt == "Find the product of 6 and 7."
    assert case.reference == "42" and case.answer_format == "boxed" and case.topic == "number theory"
    assert case.system == tpl.MATH_CASE_SYSTEM
    assert proposal.solution == "print(6 * 7)"
    assert proposal.predicted_pass_rate == pytest.approx(1 - 6 / 8)
    assert proposal.raw == MATH_REPLY
    assert proposal.source == "prompted:math@scripted/agent0-table7"
    digest = hashlib.sha256(b"agent0-table7\0Find the product of 6 and 7.").hexdigest()
    assert case.id == f"find-the-product-of-6-and-7-{digest[:6]}"  # readable: slug and hash
    assert proposal.aliases == (f"math-{digest[:16]}",)  # frontier-qa 0.1's id, still found in old stores
    assert case.metadata["seed"] == derive_seed(0, 0, 0)
    assert isinstance(curriculum, Curriculum)


@pytest.mark.parametrize(
    ("text", "question", "reference"),
    [
        ("<question>What is 6*7?</question>\n\\boxed{42}", "What is 6*7?", "42"),
        ("<question>Half of one?</question> \\boxed{\\frac{1}{2}}", "Half of one?", "\\frac{1}{2}"),
        ("<question>Q?</question> \\boxed{1} then I changed my mind: \\boxed{2}", "Q?", "2"),
        ("<question>Simplify \\boxed{x}</question>\n\\boxed{3}", "Simplify \\boxed{x}", "3"),
        ("<question>Simplify \\boxed{x}</question>", "Simplify \\boxed{x}", None),
        ("<question>How many primes are below 20?\n\\boxed{8}", "How many primes are below 20?", "8"),
        ("<question>Real?</question>\n\\boxed{5}\n<think>draft <question>decoy</question> \\boxed{9}</think>",
         "Real?", "5"),
        ("<question>Q?</question>\n\\boxed{12}\n```python\nprint('\\\\boxed{99}')\nprint(12)\n```", "Q?", "12"),
        ("<QUESTION>Upper?</QUESTION> \\boxed{{1,2}}", "Upper?", "{1,2}"),
    ],
)
def test_parse_reasoning_variants(text: str, question: str, reference: str | None) -> None:
    parsed = tpl.parse_reasoning(text)
    assert (parsed.question, parsed.reference, parsed.error) == (question, reference, None)


def test_parse_reasoning_solution_and_failures() -> None:
    parsed = tpl.parse_reasoning("<question>Q?</question>\\boxed{12}\n```py\nprint(12)\n```\n```\nprint(13)\n```")
    assert parsed.solution == "print(13)"  # the last program; an unlabelled block that prints counts
    assert tpl.parse_reasoning("<question>Q?</question>\\boxed{1}\n```\nnot code\n```").solution is None
    missing = tpl.parse_reasoning("The answer is \\boxed{4}.")
    assert missing.question is None and "no <question>" in (missing.error or "")
    empty = tpl.parse_reasoning("<question>   </question>\\boxed{1}")
    assert empty.question is None and "empty" in (empty.error or "")
    assert tpl.parse_reasoning("<question>Q</question><difficulty_prediction>8</difficulty_prediction>"
                               ).predicted_pass_rate == 0.0
    assert tpl.parse_reasoning("<question>Q</question>").predicted_pass_rate is None


def test_invalid_output_is_flagged_not_dropped() -> None:
    adapter, model = scripted("I'm sorry, I can't write a problem.")
    proposal, twin = run(PromptedCurriculum(model, domain="math").propose(2))
    assert twin.raw == proposal.raw and twin.case.id != proposal.case.id  # two generations, two records
    assert proposal.case.prompt == "" and proposal.raw == "I'm sorry, I can't write a problem."
    assert proposal.case.metadata["invalid_reason"] == "no <question> block in the curriculum output"
    assert proposal.case.id.startswith("math-invalid-") and proposal.case.answer_format == "boxed"

    _, failing = scripted(lambda case, sampling: None)
    [failed] = run(PromptedCurriculum(failing, domain="general").propose(1))
    assert failed.case.prompt == "" and failed.raw is None
    assert failed.case.metadata["invalid_reason"].startswith("the curriculum model returned no text: scripted")


def test_general_domain_uses_the_adapted_template() -> None:
    adapter, model = scripted("<question>Which planet is largest?</question>\\boxed{Jupiter}")
    [proposal] = run(PromptedCurriculum(model, domain="general", ask_solution=False).propose(1))
    system = adapter.requests[0][0].system or ""
    assert system.startswith("You are an expert setter of reasoning questions.")
    assert "```python" not in system and "<difficulty_prediction>" in system
    assert proposal.case.reference == "Jupiter" and proposal.case.id.startswith("which-planet-is-largest-")
    assert proposal.aliases[0].startswith("general-")  # frontier-qa 0.1's id


# ---------------------------------------------------------------------------- tool tasks

TOOL_REPLY = (
    "<think>refund after lookup</think>\n"
    "<question>Please look up the orders of ana@example.com and refund order A-17 for 25 dollars.</question>\n"
    "<available_tools>[\"search_orders\", \"refund\", \"teleport\"]</available_tools>\n"
    "<tool_call_answer>[{\"name\": \"search_orders\", \"arguments\": {\"customer_email\": \"ana@example.com\"}},"
    " {\"name\": \"refund\", \"arguments\": {\"order_id\": \"A-17\", \"amount\": 25, \"reason\": \"late\"}}]"
    "</tool_call_answer>"
)


def test_tool_task_in_tool_r0_format_with_real_schemas_and_grounding() -> None:
    adapter, model = scripted(TOOL_REPLY)
    curriculum = PromptedCurriculum(model, domain="tools", tools=[SEARCH, REFUND, WEATHER], seed=3)
    [proposal] = run(curriculum.propose(1))
    request = adapter.requests[0][0]
    spec = sample_tool_spec(random.Random(derive_seed(3, 0, 0)), ["search_orders", "refund", "get_weather"])
    assert f"gold tool calls: exactly {spec.n_calls}" in (request.system or "")
    for name in spec.menu:  # the menu shows the user's own schemas, verbatim
        schema = next(t for t in (SEARCH, REFUND, WEATHER) if t["function"]["name"] == name)  # type: ignore[index]
        assert json.dumps(schema, sort_keys=True) in (request.system or "")
    case = proposal.case
    assert case.tools == (SEARCH, REFUND)  # listed names → real schemas; the made-up one is recorded
    assert case.metadata["unknown_tools"] == ["teleport"]
    assert case.metadata["tool_spec"] == {"context": spec.context, "n_calls": spec.n_calls, "menu": list(spec.menu)}
    assert case.answer_format == "json:calls" and case.system is None
    assert proposal.gold_calls == (
        {"name": "search_orders", "arguments": {"customer_email": "ana@example.com"}},
        {"name": "refund", "arguments": {"order_id": "A-17", "amount": 25, "reason": "late"}},
    )
    assert case.reference == (
        '[{"arguments":{"amount":25,"order_id":"A-17","reason":"late"},"name":"refund"},'
        '{"arguments":{"customer_email":"ana@example.com"},"name":"search_orders"}]'
    )
    assert case.metadata["ungrounded_values"] == ["refund.reason='late'"]


def test_tool_task_whole_menu_when_no_list_and_errors_when_no_calls() -> None:
    reply = ("<question>Weather in Paris?</question>\n"
             "<tool_call_answer>{'name': 'get_weather', 'arguments': {'city': 'Paris'}}</tool_call_answer>")
    _, model = scripted(reply)
    [proposal] = run(PromptedCurriculum(model, domain="tools", tools=[WEATHER, SEARCH], seed=1).propose(1))
    spec = proposal.case.metadata["tool_spec"]
    assert [t["function"]["name"] for t in proposal.case.tools] == spec["menu"]  # type: ignore[index]
    assert proposal.gold_calls == ({"name": "get_weather", "arguments": {"city": "Paris"}},)
    assert proposal.case.metadata["ungrounded_values"] == []

    for bad, reason in [
        ("<question>Weather?</question>", "no <tool_call_answer> block"),
        ("<question>Weather?</question><tool_call_answer>[...]</tool_call_answer>", "ellipsis placeholder"),
        ("<question>Weather?</question><tool_call_answer>[]</tool_call_answer>", "holds no calls"),
        ("<question>Weather?</question><tool_call_answer>[{\"arguments\": {}}]</tool_call_answer>", "no tool name"),
    ]:
        _, model = scripted(bad)
        [flagged] = run(PromptedCurriculum(model, domain="tools", tools=[WEATHER]).propose(1))
        assert flagged.case.prompt == "" and reason in flagged.case.metadata["invalid_reason"], bad


def test_gold_values_must_be_grounded_in_the_question() -> None:
    question = "Refund order A-17 for 25.0 dollars, urgently."
    calls = [{"name": "refund", "arguments": {"order_id": "A-17", "amount": 25.0, "notify": True,
                                              "reason": "late", "tags": ["urgently", "vip"]}}]
    assert tpl.ungrounded_values(question, calls) == ("refund.reason='late'", "refund.tags='vip'")
    assert tpl.ungrounded_values("Order A-170 please", [{"name": "r", "arguments": {"id": "A-17"}}]) == (
        "r.id='A-17'",)  # word boundaries: A-17 is not inside A-170


def test_tool_spec_sampling_follows_tool_r0_b3() -> None:
    names = [f"t{i}" for i in range(10)]
    rng = random.Random(0)
    specs = [sample_tool_spec(rng, names) for _ in range(4000)]
    multi = [s for s in specs if s.context == "multi-turn"]
    single = [s for s in specs if s.context == "single-turn"]
    assert abs(len(multi) / len(specs) - 0.1) < 0.02
    assert all(s.n_calls == 1 for s in multi)
    assert abs(sum(s.n_calls == 2 for s in single) / len(single) - 0.2) < 0.03
    assert all(3 <= len(s.menu) <= 5 for s in specs if s.n_calls == 2)
    assert {len(s.menu) for s in specs if s.n_calls == 1} == set(range(2, 9))
    assert all(len(set(s.menu)) == len(s.menu) and set(s.menu) <= set(names) for s in specs)
    few = sample_tool_spec(random.Random(5), ["only"])
    assert few.menu == ("only",) and few.n_calls == 1  # capped by the tools the user has
    assert sample_tool_spec(random.Random(9), names) == sample_tool_spec(random.Random(9), names)


# ---------------------------------------------------------------------- other domains


def test_open_ended_domain() -> None:
    adapter, model = scripted("<question>Why is the sky blue?</question>\n<answer>Rayleigh scattering of "
                              "sunlight by air molecules.</answer>")
    [proposal] = run(PromptedCurriculum(model, domain="open_ended", topics=["physics"]).propose(1))
    assert "about physics" in (adapter.requests[0][0].system or "")
    assert proposal.case.answer_format == "text" and proposal.case.system == tpl.OPEN_ENDED_CASE_SYSTEM
    assert proposal.case.reference == "Rayleigh scattering of sunlight by air molecules."


def test_workflow_domain() -> None:
    reply = ("<question>Refund the last order of bo@example.com if it shipped late.</question>\n"
             "<steps>\n1. search_orders for bo@example.com\n- check the ship date\n* refund the order\n</steps>\n"
             "<answer>Order B-2 refunded</answer>")
    adapter, model = scripted(reply)
    description = "a support agent with tools search_orders and refund"
    curriculum = PromptedCurriculum(model, domain="workflow", agent_description=description,
                                    tools=[SEARCH, REFUND])
    [proposal] = run(curriculum.propose(1))
    system = adapter.requests[0][0].system or ""
    assert description in system and "- refund: Refund an order" in system
    case = proposal.case
    assert case.answer_format == "text" and case.system is None and case.tools == (SEARCH, REFUND)
    assert case.reference == "Order B-2 refunded"
    assert case.metadata["expected_steps"] == ["search_orders for bo@example.com", "check the ship date",
                                               "refund the order"]
    assert case.metadata["agent_description"] == description
    _, model = scripted(reply)
    final = PromptedCurriculum(model, domain="workflow", agent_description=description, answer_format="final_answer")
    [proposal] = run(final.propose(1))
    assert proposal.case.answer_format == "final_answer" and proposal.case.system == tpl.FINAL_ANSWER_CASE_SYSTEM


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"domain": "poetry"}, "unknown curriculum domain"),
        ({"domain": "tools"}, "needs the target's tool schemas"),
        ({"domain": "workflow"}, "needs a description"),
        ({"domain": "tools", "tools": [{"type": "function", "function": {}}]}, "has no name"),
        ({"domain": "tools", "tools": [WEATHER, WEATHER]}, "repeat"),
        ({"domain": "math", "answer_format": "text"}, "not available"),
        ({"domain": "math", "history_examples": -1}, "must be >= 0"),
    ],
)
def test_configuration_errors(kwargs: dict[str, object], message: str) -> None:
    _, model = scripted(MATH_REPLY)
    with pytest.raises(ConfigError, match=message):
        PromptedCurriculum(model, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- adaptation


def numbered(case: Case, sampling: Sampling) -> str:
    return f"<question>What is {sampling.seed} plus one?</question>\n\\boxed{{{(sampling.seed or 0) + 1}}}"


def outcome(question: str, case_class: str, p_hat: float | None, reason: str | None = None) -> Outcome:
    return Outcome(Proposal(Case(id=question[:8], prompt=question)), case_class, p_hat=p_hat, reason=reason)


def test_history_shows_up_in_the_next_prompt() -> None:
    adapter, model = scripted(numbered)
    curriculum = PromptedCurriculum(model, domain="math", history_examples=2)
    first = run(curriculum.propose(2))
    assert adapter.requests[0][0].prompt == tpl.AGENT0_USER  # nothing to show yet
    curriculum.observe([
        Outcome(first[0], "frontier", p_hat=0.5),
        Outcome(first[1], "pass", p_hat=1.0),
        outcome("Count the lattice points in a big circle.", "suspect", 0.3, "answers scattered, p̂ below band"),
        outcome("Stable but wrong one.", "failure", 0.9),
        outcome("", "invalid", None, "no <question> block in the curriculum output"),
    ])
    run(curriculum.propose(1))
    prompt = adapter.requests[2][0].prompt
    assert prompt.endswith(tpl.AGENT0_USER)
    frontier_heading, easy_heading, hard_heading, rejected_heading = (h for _, h in tpl.HISTORY_HEADINGS)
    blocks = {heading: prompt.split(heading + ":\n", 1)[1].split("\n\n", 1)[0]
              for heading in (frontier_heading, easy_heading, hard_heading, rejected_heading)}
    assert blocks[frontier_heading] == (f"- {first[0].case.prompt} (p̂ = 0.50)\n- Stable but wrong one. (p̂ = 0.90)")
    assert blocks[easy_heading] == f"- {first[1].case.prompt} (p̂ = 1.00)"
    assert blocks[hard_heading] == "- Count the lattice points in a big circle. (p̂ = 0.30)"
    assert blocks[rejected_heading] == "- no <question> block in the curriculum output"
    assert prompt.index(frontier_heading) < prompt.index(easy_heading) < prompt.index(hard_heading)


def test_history_keeps_the_most_recent_examples() -> None:
    adapter, model = scripted(numbered)
    curriculum = PromptedCurriculum(model, domain="math", history_examples=1)
    curriculum.observe([outcome(f"Old frontier task {i}.", "frontier", 0.5) for i in range(3)])
    run(curriculum.propose(1))
    prompt = adapter.requests[0][0].prompt
    assert "Old frontier task 2." in prompt and "Old frontier task 1." not in prompt
    silent = PromptedCurriculum(scripted(numbered)[1], domain="math", history_examples=0)  # type: ignore[arg-type]
    silent.observe([outcome("Hidden.", "frontier", 0.5)])
    assert silent.history_text() == ""


def test_deterministic_by_seed_and_resumed_from_the_cache(tmp_path: Path) -> None:
    def two_rounds(seed: int, cache: object = False) -> tuple[list[str], Scripted]:
        adapter, model = scripted(numbered, cache=cache)
        curriculum = PromptedCurriculum(model, domain="math", seed=seed)
        ids = [p.case.id for p in run(curriculum.propose(2))] + [p.case.id for p in run(curriculum.propose(2))]
        return ids, adapter

    ids, adapter = two_rounds(7)
    assert [s.seed for _, s in adapter.requests] == [derive_seed(7, r, i) for r in (0, 1) for i in (0, 1)]
    assert len(set(ids)) == 4
    assert two_rounds(7)[0] == ids and two_rounds(8)[0] != ids
    cache = tmp_path / "cache"
    first, _ = two_rounds(7, cache)
    again, replayed = two_rounds(7, cache)
    assert again == first == ids and replayed.requests == []  # a resumed run costs nothing
    assert derive_seed(0, 0, 1) != derive_seed(0, 1, 0) and 0 <= derive_seed(2**40, 3, 4) < 2**31


def test_topics_rotate_in_a_seeded_order() -> None:
    adapter, model = scripted(numbered)
    topics = ["algebra", "geometry", "probability"]
    curriculum = PromptedCurriculum(model, domain="math", topics=topics, seed=4, topic_from="asked")
    first = run(curriculum.propose(2))
    second = run(curriculum.propose(2))
    seen = [p.case.topic for p in first + second]
    assert sorted(seen[:3]) == sorted(topics) and seen[3] == seen[0]
    for (request, _), topic in zip(adapter.requests, seen, strict=True):
        assert f"must be about {topic}." in (request.system or "")


def test_from_spec_opens_the_model_like_a_trained_checkpoint() -> None:
    curriculum = from_spec(f"python:{Path(__file__).resolve()}:scripted_agent", domain="math",
                           target_options={"cache": False}, seed=1)
    try:
        [proposal] = run(curriculum.propose(1))
        assert (proposal.case.prompt, proposal.case.reference) == ("What is 2 + 2?", "4")
        assert curriculum.name.startswith("prompted:math@python:")
        assert run(curriculum.propose(0)) == []
    finally:
        run(curriculum.aclose())


@pytest.mark.model
@pytest.mark.slow
def test_smollm2_proposes_math_tasks(report_measurement) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("transformers")
    model = open_target("hf:smollm2", cache=False)
    curriculum = PromptedCurriculum(model, domain="math", seed=0,
                                    sampling=Sampling(temperature=1.0, top_p=0.99, max_tokens=96))
    try:
        run(model.sample(Case(id="warm", prompt="Hi"), 1, Sampling(max_tokens=1, seed=0)))  # load once
        started = time.perf_counter()
        proposals = run(curriculum.propose(2))
        elapsed = time.perf_counter() - started
    finally:
        run(model.aclose())
    assert len(proposals) == 2
    for p in proposals:
        assert isinstance(p.raw, str) and p.raw  # the model wrote something either way
        assert bool(p.case.prompt) != ("invalid_reason" in p.case.metadata)
    parsed = sum(bool(p.case.prompt) for p in proposals)
    report_measurement("smollm2_curriculum", f"SmolLM2-135M curriculum (CPU, 2 concurrent, max_tokens=96): "
                                             f"{elapsed:.1f} s for 2 proposals, {parsed}/2 parsed")
    assert DEFAULT_SAMPLING.top_p == 0.99
