"""Is the task well-posed? Rules, a model judge, the chain on the validator's critic seam, and what
the probe does with the verdict: ill-posed tasks cost no target call, and an in-band case on a task
nobody checked is ``unchecked``, never ``frontier`` (issue 27).

The rule examples here are written for these tests, not taken from the labelled set
(``benchmarks/data/validity``), whose held-out half measures the rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._engine import ProbeSettings, probe
from frontier_qa.probing._task_rules import ILL_POSED, UNVERIFIABLE, rule_findings
from frontier_qa.probing._validation import Validator
from frontier_qa.probing._validity import (
    AUTHOR,
    VALIDITY_KEY,
    WELL_POSED,
    ModelJudge,
    RuleJudge,
    ValidityJudge,
    parse_validity,
    task_checked,
)
from frontier_qa.reports import GateThresholds, evaluate_gate
from frontier_qa.reports._console import console_lines
from frontier_qa.reports._report_input import ReportInput
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._records import CaseClass
from frontier_qa.target import Case
from frontier_qa.testing import ScriptedAdapter, open_scripted, static_curriculum
from tests.factories import run

QUIET = ProbeSettings(replay_first=False)  # the default policy: sampled until the band is decided


def kinds(text: str) -> list[tuple[str, str]]:
    return [(f.verdict, f.kind) for f in rule_findings(text)]


# --- rules ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "kind"), [
    ("A farmer plants 12 rows of corn. The tractor is red.", "not-a-task"),
    ("Please answer the question below.", "not-a-task"),
    ("If a week has 9 days, how many days are in 2 weeks?", "false-premise"),
    ("How many days are there from March 32nd to April 3rd?", "false-premise"),
    ("Half of the 15 players are tall. How many players are not tall?", "false-premise"),
    ("A club has 20 members: 9 adults and 12 children. How many more children than adults are there?",
     "contradiction"),
    ("A bag has 30 marbles. A third of them, 12 marbles, are blue. How many are not blue?", "contradiction"),
    ("Pens cost $2 each. Ada bought 5 of them for $12. What would 3 pens cost?", "contradiction"),
    ("A lorry drives 200 miles in 4 hours. How many apples does it carry?", "unrelated"),
    ("A ship sails at 20 miles per hour. How long does the voyage take?", "missing"),
    ("A field is 40 meters long. What is its area?", "missing"),
    ("A ticket costs $9. How old is the cashier?", "unrelated"),
    ("Divide 50 by half and subtract 5. What is the result?", "readings"),
])
def test_each_kind_of_ill_posed_task_has_a_rule(text: str, kind: str) -> None:
    assert (ILL_POSED, kind) in kinds(text)


@pytest.mark.parametrize("text", [
    "A box holds 6 rows of 8 eggs. How many eggs are in the box?",
    "A train leaves at 2:10 pm and arrives at 4:40 pm. How long is the trip?",
    "A garden is 12 meters long and 5 meters wide. What is its area?",
    "A square tile has sides of 30 cm. What is its area in square centimeters?",
    "Noor is 9 and her aunt is 4 times as old. How old is her aunt?",
    "How many minutes are in 2.5 hours?",
    "A cyclist rides 45 km in 3 hours. How fast does she ride?",
    "Tea costs $4 a box. Jo pays with a $20 bill for 3 boxes. How much change does she get?",
    "A class of 28 students has 16 girls. How many boys are there?",
    "Half of a number is 21. What is the number?",
    "Water fills a 90-liter tank at 15 liters per minute. How many minutes does it take to fill?",
    "Find 40% of 250.",
])
def test_rules_let_well_posed_tasks_through(text: str) -> None:
    assert [f for f in rule_findings(text) if f.verdict == ILL_POSED] == []


@pytest.mark.parametrize("text", [
    "Which phone plan should the Diaz family choose?",
    "What will a loaf of bread cost next year?",
    "How much did I spend on petrol in May?",
])
def test_opinions_predictions_and_private_facts_are_unverifiable(text: str) -> None:
    assert (UNVERIFIABLE, "") in kinds(text)


def test_the_rule_judge_rejects_with_the_kind_and_never_vouches() -> None:
    judge = RuleJudge()
    bad = judge.verdict("A shirt costs $15. How many buttons does the tailor own?")
    assert (bad.passed, bad.validity, bad.judge) == (False, ILL_POSED, "rules")
    assert bad.reason.startswith("ill-posed (unrelated): it asks how many buttons")
    fine = judge.verdict("A box holds 6 rows of 8 eggs. How many eggs are in the box?")
    assert (fine.passed, fine.validity) == (True, None)  # nothing found is not "well-posed"


# --- a model as judge -------------------------------------------------------------------------


@pytest.mark.parametrize(("reply", "verdict"), [
    (" well-posed", WELL_POSED),
    ("Ill-posed (the price is not given)", ILL_POSED),
    ("not well posed: two readings", ILL_POSED),
    (" unverifiable\nProblem: ...", UNVERIFIABLE),
    ("I think it is fine", None),
    ("", None),
])
def test_the_judge_models_verdict_is_its_first_verdict_word(reply: str, verdict: str | None) -> None:
    assert parse_validity(reply)[0] == verdict


def test_a_model_judge_reads_a_verdict_and_leaves_a_non_answer_unchecked() -> None:
    replies = {"A ferry carries 30 cars. How far is the harbor?": "ill-posed (no distance is given)",
               "A box holds 6 rows of 8 eggs. How many eggs are in the box?": "well-posed",
               "What is 2 + 2?": "the problem is about numbers"}

    def answer(case: Case, i: int) -> str:
        problem = case.prompt.rsplit("Problem: ", 1)[1].removesuffix("\nVerdict:")
        return replies[problem]

    judge = ModelJudge(open_scripted(ScriptedAdapter(answer)), name="scripted judge")
    bad, good, unsure = (run(judge.verdict(t)) for t in replies)
    assert (bad.passed, bad.validity, bad.reason) == (False, ILL_POSED, "ill-posed: no distance is given")
    assert (good.passed, good.validity, good.judge) == (True, WELL_POSED, "scripted judge")
    assert (unsure.passed, unsure.validity) == (True, None)


def test_the_chain_asks_the_model_only_about_what_the_rules_let_through() -> None:
    asked: list[str] = []

    def answer(case: Case, i: int) -> str:
        asked.append(case.prompt)
        return "well-posed"

    chain = ValidityJudge(model=ModelJudge(open_scripted(ScriptedAdapter(answer))))
    ill = Proposal(Case(id="a", prompt="A pen costs $2. How many legs does the pen have?"))
    fine = Proposal(Case(id="b", prompt="A box holds 6 rows of 8 eggs. How many eggs are in the box?"))
    mine = Proposal(Case(id="c", prompt="Nothing here is a question."), written=True)
    v_ill, v_fine, v_mine = (run(chain.judge(p)) for p in (ill, fine, mine))
    assert (v_ill.passed, v_ill.judge) == (False, "rules")
    assert (v_fine.passed, v_fine.validity) == (True, WELL_POSED)
    assert (v_mine.passed, v_mine.judge) == (True, AUTHOR)  # a person's case is theirs to keep
    assert len(asked) == 1 and "eggs" in asked[0]


def test_a_task_is_checked_by_a_verified_reference_a_well_posed_verdict_or_its_author() -> None:
    def with_note(note: dict[str, object] | None) -> Case:
        return Case(id="x", prompt="p", metadata={} if note is None else {VALIDITY_KEY: note})

    assert task_checked(with_note(None), verified=True)
    assert not task_checked(with_note(None), verified=False)
    assert not task_checked(with_note({"verdict": None, "judge": "rules"}), verified=False)
    assert task_checked(with_note({"verdict": WELL_POSED, "judge": "model m"}), verified=False)
    assert task_checked(with_note({"verdict": None, "judge": AUTHOR}), verified=False)
    assert not task_checked(with_note({"verdict": UNVERIFIABLE, "judge": "rules"}), verified=False)


# --- in the probe -------------------------------------------------------------------------------

COIN = "A box holds 7 rows of 9 eggs. How many eggs are in the box?"
ILL = "A lamp costs $30. How many pages does the lamp have?"
VERIFIED = "Each of 5 crates carries 11 melons. What is the total number of melons on the truck?"


def generated(case_id: str, prompt: str, solution: str | None = None) -> Proposal:
    return Proposal(Case(id=case_id, prompt=prompt, topic="eggs", answer_format="boxed"), solution=solution,
                    source="generated")


def coin_flip() -> ScriptedAdapter:
    # every case: one answer on even samples, another on odd ones: p̂ = 0.5, in the band
    return ScriptedAdapter(lambda case, i: "63" if i % 2 == 0 else "36")


def test_an_ill_posed_task_costs_no_call_and_an_unchecked_one_is_not_frontier(tmp_path: Path) -> None:
    adapter = coin_flip()
    cases = [generated("ill", ILL), generated("unchecked", COIN), generated("verified", VERIFIED,
                                                                          solution="print(5 * 11)")]
    result = run(probe(open_scripted(adapter), static_curriculum(cases), QUIET, store=CaseStore(tmp_path),
                       validator=Validator(critic=ValidityJudge())))
    got = {r.id: r for r in result.records}
    assert got["ill"].case_class is CaseClass.INVALID and got["ill"].k == 0
    assert got["ill"].reason == "ill-posed (unrelated): it asks how many pages, which the task never mentions " \
                                "(judge: rules)"
    assert "ill" not in {case_id for case_id, _, _ in adapter.calls}
    assert got["unchecked"].case_class is CaseClass.UNCHECKED
    assert got["unchecked"].reason.startswith("uncertain on an unchecked task: p̂ = 0.5")  # 0.50, or 0.56 at k = 9
    assert "rules found nothing wrong but cannot vouch for it" in got["unchecked"].reason
    assert got["unchecked"].case.metadata[VALIDITY_KEY] == {"verdict": None, "judge": "rules",
                                                            "reason": "the rules found nothing wrong"}
    assert got["verified"].case_class is CaseClass.FRONTIER  # the sandbox computed its reference


def test_a_judge_models_well_posed_verdict_makes_the_same_case_frontier(tmp_path: Path) -> None:
    judge = ModelJudge(open_scripted(ScriptedAdapter(lambda case, i: "well-posed")), name="stronger model")
    result = run(probe(open_scripted(coin_flip()), static_curriculum([generated("c", COIN)]), QUIET,
                       store=CaseStore(tmp_path), validator=Validator(critic=ValidityJudge(model=judge))))
    (record,) = result.records
    assert record.case_class is CaseClass.FRONTIER
    assert record.case.metadata[VALIDITY_KEY]["judge"] == "stronger model"


def test_unchecked_cases_are_counted_apart_in_the_map_and_the_gate(tmp_path: Path) -> None:
    result = run(probe(open_scripted(coin_flip()), static_curriculum([generated("c", COIN)]), QUIET,
                       store=CaseStore(tmp_path), validator=Validator(critic=ValidityJudge())))
    gate = evaluate_gate(result.records, GateThresholds(max_frontier_share=0.0, max_unchecked=0))
    checks = {c.name: c for c in gate.checks}
    assert checks["frontier_share"].passed and checks["frontier_share"].value == 0.0
    assert not checks["unchecked"].passed and checks["unchecked"].value == 1
    lines = console_lines(ReportInput.of(result.records, result.run, gate=gate), "title")
    assert "  frontier map: eggs: 0 frontier, 0 failure of 1 (+1 uncertain on unchecked tasks)" in lines


def test_the_config_names_the_validity_judge(tmp_path: Path) -> None:
    from frontier_qa.config import build_probe, load_config
    from frontier_qa.errors import ConfigError

    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "a", "prompt": "2+2?"}) + "\n")
    def config(validity: object) -> Path:
        path = tmp_path / "c.yaml"
        path.write_text(json.dumps({"target": "mock:right", "curriculum": {"type": "file", "path": str(cases)},
                                    "store": str(tmp_path / "st"), "validation": {"validity": validity}}))
        return path

    with pytest.raises(ConfigError, match="judge: model needs validity.model"):
        load_config(config("model"))
    with pytest.raises(ConfigError, match="judge: curriculum needs a prompted curriculum"):
        build_probe(load_config(config({"judge": "curriculum"})))
    parts = build_probe(load_config(config("off")))
    assert parts.validator.critic is None
    run(parts.aclose())
    parts = build_probe(load_config(config({"model": "mock:right"})))
    critic = parts.validator.critic
    assert isinstance(critic, ValidityJudge) and critic.name.startswith("rules + model mock:right")
    run(parts.aclose())


# --- a reference is verified only when a program computes it --------------------------------------


@pytest.mark.parametrize(("program", "nothing"), [
    ("print(2500)", True),
    ("print('Sunday')", True),
    ("answer = 42\nprint(answer)", True),
    ("print(-5)", True),
    ("print(6 * 8)", False),
    ("days = ['Mon', 'Tue']\nprint(days[1])", False),
    ("print(round(120 * 0.25))", False),
    ("total = 0\nfor x in range(4):\n    total += x\nprint(total)", False),
    ("print(", False),  # does not parse: running it says what is wrong
])
def test_a_program_that_prints_a_constant_verifies_nothing(program: str, nothing: bool) -> None:
    from frontier_qa.probing._verify import computes_nothing

    assert computes_nothing(program) is nothing


def test_a_constant_program_leaves_the_reference_unverified_and_the_case_unchecked(tmp_path: Path) -> None:
    case = generated("const", VERIFIED, solution="print(55)")
    result = run(probe(open_scripted(coin_flip()), static_curriculum([case]), QUIET, store=CaseStore(tmp_path),
                       validator=Validator(critic=ValidityJudge())))
    (record,) = result.records
    assert not record.case.reference_verified
    assert record.case.metadata["verification"].startswith("the solution program prints a constant")
    assert record.case_class is CaseClass.UNCHECKED


# --- topics from the text ---------------------------------------------------------------------------


def test_a_generated_task_is_filed_under_the_topic_of_its_text() -> None:
    from frontier_qa.curricula._prompted import PromptedCurriculum
    from frontier_qa.curricula._topics import TopicAssigner
    from frontier_qa.testing import words_embedder

    assigner = TopicAssigner(["eggs", "trains"], embedder=words_embedder())
    assert assigner.assign_many(["How many eggs fit in 3 egg boxes?", "How many trains stop here each day?"]) == [
        "eggs", "trains"]

    # the model is asked about trains (the rotation's slot) and writes about eggs
    model = open_scripted(ScriptedAdapter(lambda case, i: "Problem: Mia buys 5 cartons of 12 eggs for "
                                                          "a party. How many eggs does Mia get?\nAnswer: 60\n"
                                                          "Program: print(5 * 12)"))
    cur = PromptedCurriculum(model, style="few_shot", topics=["trains", "eggs"], seed=0,
                             topic_embedder=words_embedder())
    proposals = run(cur.propose(2))
    assert {p.case.topic for p in proposals} == {"eggs"}
    assert sorted(p.case.metadata["asked_topic"] for p in proposals) == ["eggs", "trains"]
    asked = PromptedCurriculum(model, style="few_shot", topics=["trains", "eggs"], seed=0, topic_from="asked")
    assert sorted(p.case.topic for p in run(asked.propose(2))) == ["eggs", "trains"]


# --- the labelled set and its benchmark -------------------------------------------------------------


def test_the_labelled_set_follows_its_rule_and_its_split() -> None:
    import hashlib

    from tests.factories import REPO

    data = REPO / "benchmarks" / "data" / "validity"
    rows = [json.loads(line) for path in sorted(data.glob("*.jsonl")) for line in path.read_text().splitlines()]
    assert len(rows) >= 200 and len({r["id"] for r in rows}) == len(rows)
    fields = {"id", "prompt", "label", "kind", "why", "topic", "source", "origin", "split"}
    kinds = {"missing", "contradiction", "unrelated", "readings", "false-premise", "not-a-task"}
    for r in rows:
        assert set(r) == fields, r["id"]
        assert r["split"] == ("dev" if hashlib.sha256(r["id"].encode()).digest()[0] % 2 == 0 else "heldout")
        assert (r["kind"] in kinds) == (r["label"] == "ill-posed"), r["id"]
    held = [r for r in rows if r["split"] == "heldout"]
    assert {r["label"] for r in held} >= {"well-posed", "ill-posed"} and {r["source"] for r in held} >= {"smollm2", "written"}


def test_the_validity_bench_prints_catch_and_false_rejection_on_a_slice(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.factories import load_benchmark

    bench = load_benchmark("validity_bench")
    assert bench.main(["--split", "all", "--limit", "30"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("all half: 30 tasks (")
    line = next(ln for ln in out.splitlines() if ln.startswith("rules "))
    caught, ill = (int(x) for x in line.split("catch")[1].split("=")[0].split("/"))
    rows = bench.load("all")[:30]
    assert ill == sum(r["label"] == "ill-posed" for r in rows) and 0 <= caught <= ill
    assert "false rejection" in line and "by kind:" in out


def test_answers_split_along_readings_make_an_unclear_task_not_a_frontier(tmp_path: Path) -> None:
    def judge_answer(case: Case, i: int) -> str:
        if case.prompt.startswith("A test question got two different answers"):
            assert {"Answer A: 63", "Answer B: 36"} <= set(case.prompt.splitlines()) or {
                "Answer A: 36", "Answer B: 63"} <= set(case.prompt.splitlines())
            return "unclear - rows and columns can be read either way"
        return "well-posed"

    judge = ModelJudge(open_scripted(ScriptedAdapter(judge_answer)), name="stronger model")
    result = run(probe(open_scripted(coin_flip()), static_curriculum([generated("c", COIN)]), QUIET,
                       store=CaseStore(tmp_path), validator=Validator(critic=ValidityJudge(model=judge))))
    (record,) = result.records
    assert record.case_class is CaseClass.UNCHECKED
    assert record.reason.startswith("unclear task: the answers split along readings of the task (")
    assert "stronger model: rows and columns can be read either way); unsure: p̂ = 0.5" in record.reason
    assert record.case.metadata["readings"] == {"judge": "stronger model", "unclear": True,
                                                "why": "rows and columns can be read either way"}
