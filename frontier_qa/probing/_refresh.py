"""Refreshing a stored case from its source: judge the stored samples again, or say it needs a probe.

A person fixes a wrong reference in ``cases.jsonl`` (``"43"`` → ``"42"``); the store still holds
the case as it was. Stale state is either refreshed or named, so :func:`refresh_case` compares
the latest record of a case with the case as its source has it now (the hashes of
:mod:`frontier_qa.store._inputs`) and:

* nothing that matters changed → ``unchanged``, nothing to do;
* the reference, whether the source vouches for it, its solution program, the answer format or
  the trajectory expectations (``expect``) changed → ``refreshed``: the record's stored samples
  are judged again against the new inputs (their paths, misses and pass^k from their stored
  steps: :mod:`frontier_qa.probing._paths_judge`), with the probe's own equivalence and classification
  (:class:`~frontier_qa.probing._case_prober.CaseProber`, :func:`~frontier_qa.probing._classify.classify_case`)
  and **no target call**: a new :class:`~frontier_qa.store._records.CaseRecord` whose reason says
  what changed ("reference changed 43 → 42: re-judged from the 6 stored samples without a
  call; …") and a message that also says what moved (``(still pass; path: wrong path → stable;
  pass^8 0.00 → 1.00)``). The re-judgement makes no call; the run that asked for it may still
  replay the case afterwards, which does. The band decision does not depend on the reference, so the one the record kept
  stands; only a changed answer format reads the answers again from the stored texts;
* only the topic or the source's metadata changed → ``refreshed`` with the class kept;
* what the target sees changed (prompt, system prompt, tools, history), or the answer format
  changed and the stored texts are cut or hold tool calls the record did not keep → ``reprobe``:
  the samples answer another question; the caller probes the case as a new observation.

The old record stays in the store as history (the store is append-only; the latest record
wins). Baselines follow by themselves (:func:`frontier_qa.store._baselines.current_inputs`): the
refreshed record, or the first new observation, is the case's first under its new inputs.
Refreshing a whole suite against its cases file: :mod:`frontier_qa.probing._reconcile`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from frontier_qa import __version__
from frontier_qa.probing._case_prober import CaseProber, answers_of
from frontier_qa.probing._classify import POSTERIOR_KEY, CaseEvidence, classify_case, confidence_of, posterior_note
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._paths_judge import judge_paths
from frontier_qa.probing._posterior import BandPosterior
from frontier_qa.probing._run import prepared_case
from frontier_qa.probing._sequential import BandDecision, decide_consistency, wilson_interval
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.probing._validation import TaskCritique, ValidationResult
from frontier_qa.probing._validity import VALIDITY_KEY, task_checked, unchecked_why
from frontier_qa.probing._verify import (
    AGREES,
    COMPUTES_NOTHING,
    PRINTED_NOTHING,
    SOLUTION_KEY,
    Verification,
    check_printed,
    computes_nothing,
    trusted,
    verify_reference,
)
from frontier_qa.runtime.sandbox import Sandbox
from frontier_qa.scoring._case_scoring import TOOL_CALLS_FORMAT
from frontier_qa.scoring._paths import view_of_steps
from frontier_qa.store._inputs import (
    ENGINE_KEYS,
    INPUT_HASH_KEY,
    PASS_RATE_KEY,
    REFRESHED_KEY,
    TAKEN_FROM_SOLUTION,
    CaseInputs,
    describe_change,
    recorded_hash,
    recorded_inputs,
    source_inputs,
    stamped,
)
from frontier_qa.store._records import (
    SCHEMA_VERSION,
    CaseClass,
    CaseRecord,
    ClusterCount,
    Cost,
    Interval,
    Round,
    finding_word,
    utc_now,
)
from frontier_qa.target import Case, Trajectory

FIXED_K_LEVEL = 0.9  # the Wilson level of a fixed-k record's interval (as the prober's)

# what the engine noted about an earlier observation: a suite row carries these in its metadata,
# and none of them holds for the case judged again
_NOTES = frozenset({"verification", "solution_output", "critic", "judge", "stated_reference", POSTERIOR_KEY,
                    INPUT_HASH_KEY, REFRESHED_KEY})


class Action(str, enum.Enum):
    """What a stored case needs after comparing it with its source."""

    UNCHANGED = "unchanged"
    REFRESHED = "refreshed"
    REPROBE = "reprobe"


@dataclass(frozen=True)
class Refresh:
    """What refreshing one stored case found.

    Attributes:
        case_id: the case.
        action: ``unchanged``, ``refreshed`` (``record`` is the new observation, not yet stored)
            or ``reprobe`` (the caller must probe ``proposal`` as a new observation).
        change: what changed, in words (``"reference changed 43 → 42"``); ``""`` when nothing did.
        message: one line for the user: what changed and what was done about it.
        proposal: the case as its source has it now, with the stored id.
        record: the refreshed record (``refreshed`` only).
        previous: the stored record it was compared with.
    """

    case_id: str
    action: Action
    change: str
    message: str
    proposal: Proposal
    previous: CaseRecord
    record: CaseRecord | None = None


def refresh_prober(settings: ProbeSettings) -> CaseProber:
    """A prober that scores and matches answers as the probe does and can call no target."""
    return CaseProber(settings, target_id="refresh")


async def refresh_case(
    record: CaseRecord,
    proposal: Proposal,
    settings: ProbeSettings | None = None,
    *,
    run_id: str,
    prober: CaseProber | None = None,
    sandbox: Sandbox | None = None,
) -> Refresh:
    """Compare a case's latest record with the case as its source has it now, and refresh it.

    Args:
        record: the case's latest stored record.
        proposal: the case as its source (the cases file) has it now; its id is taken as the
            record's (a file case without an id may be known under its 0.1 alias).
        settings: the run's settings: the band (reason texts), the sequential policy and the
            embedder (a changed answer format is decided again), ``verify_references``.
        run_id: the run the refreshed record is written under.
        prober: a :func:`refresh_prober` to share across cases (default: one made here).
        sandbox: runs a changed solution program (default: one made on first need); an
            unchanged one is not run again: the record kept what it printed.

    Returns:
        A :class:`Refresh`; nothing is written.
    """
    settings = settings or ProbeSettings()
    proposal = replace(proposal, case=replace(proposal.case, id=record.id))
    new = source_inputs(proposal.case, solution=proposal.solution, predicted_pass_rate=proposal.predicted_pass_rate)
    parts = recorded_hash(record.case).changed(new.input_hash())
    if not parts:
        return Refresh(record.id, Action.UNCHANGED, "", "", proposal, record)
    change = describe_change(recorded_inputs(record.case), new, parts)

    def again(why: str) -> Refresh:
        return Refresh(record.id, Action.REPROBE, change,
                       f"{change}: {why}; to be probed again as a new case (its earlier records stay as "
                       "history, not as its baseline)",
                       proposal, record)

    if "asked" in parts:
        return again("the stored samples answer another question")
    if record.case_class is CaseClass.INVALID or not record.samples:
        return again("the stored record has no samples to judge")
    fmt_changed = proposal.case.answer_format != record.case.answer_format
    if fmt_changed:
        unreadable = _unreadable(record, proposal.case.answer_format)
        if unreadable:
            return again(unreadable)
    if "judged" not in parts:  # the topic or metadata only: nothing to judge again
        how = "nothing to judge again, class kept"
        refreshed = _record(record, _relabelled(record, proposal, new), record.case_class, how, change,
                            _class_reason(record), run_id, verified=record.case.reference_verified,
                            majority_correct=record.majority_correct)
        return Refresh(record.id, Action.REFRESHED, change, f"{change}: {how}", proposal, record, refreshed)
    prober = prober or refresh_prober(settings)
    check = await _verification(proposal, record, settings, sandbox)
    source = replace(proposal.case, metadata={k: v for k, v in proposal.case.metadata.items() if k not in _NOTES})
    case = prepared_case(ValidationResult(replace(proposal, case=source), True, critic=_critic(record)), check)
    judged = await _judge(record, case, check, settings, prober, rescore=fmt_changed)
    if isinstance(judged, str):
        return again(judged)
    how = f"re-judged from the {record.k} stored samples without a call"
    case, case_class, reason, verified, correct, update = judged
    update = {**update, **await _paths(record, case, settings, prober, update)}
    refreshed = _record(record, case, case_class, how, change, reason, run_id, verified=verified,
                        majority_correct=correct, **update)
    message = f"{change}: {how} ({'; '.join(_moves(record, refreshed))})"
    return Refresh(record.id, Action.REFRESHED, change, message, proposal, record, refreshed)


def _pass_k(record: CaseRecord) -> str:
    return "—" if record.pass_k is None or record.pass_k.value is None else f"{record.pass_k.value:.2f}"


def _moves(old: CaseRecord, new: CaseRecord) -> list[str]:
    """What a re-judgement changed, in words: the class (``still pass``, ``failure → pass``), and
    the path finding and pass^k where they moved (``path: wrong path → stable``, ``pass^8 0.00 →
    1.00``): an edited ``expect`` can turn a wrong path right while the answers' class stays.
    """
    said = [f"{old.case_class.value} → {new.case_class.value}" if new.case_class is not old.case_class
            else f"still {new.case_class.value}"]
    if finding_word(old.path) != finding_word(new.path):
        said.append(f"path: {finding_word(old.path)} → {finding_word(new.path)}")
    counted = new.pass_k or old.pass_k
    if counted is not None and _pass_k(old) != _pass_k(new):
        said.append(f"pass^{counted.k} {_pass_k(old)} → {_pass_k(new)}")
    return said


# --- the parts ---------------------------------------------------------------------------


def _unreadable(record: CaseRecord, answer_format: str) -> str | None:
    """Why the stored texts cannot be read in a new answer format, ``None`` when they can."""
    if TOOL_CALLS_FORMAT in (answer_format, record.case.answer_format):
        return "the answers of tool-calling cases are the calls made, which records do not keep"
    cut = sum(1 for s in record.samples if s.truncated)
    if cut:
        return f"{cut} of the {record.k} stored texts are cut, so answers cannot be read again in the new format"
    return None


def _critic(record: CaseRecord) -> TaskCritique | None:
    # the critic judged the task the target sees, which a refresh never changes
    note = record.case.metadata.get("critic")
    validity = record.case.metadata.get(VALIDITY_KEY)
    said = validity if isinstance(validity, Mapping) else {}
    verdict, judge = said.get("verdict"), said.get("judge")
    if isinstance(note, Mapping) and isinstance(note.get("score"), (int, float)):
        return TaskCritique(float(note["score"]), True, str(note.get("reason", "")), verdict,
                             judge if isinstance(judge, str) else None)
    return None


def _stored_output(record: CaseRecord, solution: str) -> tuple[bool, str | None]:
    """What the record's solution program printed, if this same program ran: ``(known, output)``."""
    meta = record.case.metadata
    if meta.get(SOLUTION_KEY) != solution:
        return False, None
    note = meta.get("verification")
    output = meta.get("solution_output")
    if isinstance(output, str):
        return True, output
    if note == AGREES or (isinstance(note, str) and note.startswith(TAKEN_FROM_SOLUTION)):
        return True, record.case.reference  # it printed the reference itself (else it would be kept apart)
    if note == PRINTED_NOTHING:
        return True, None
    return False, None  # it failed or never ran: run it now


async def _verification(proposal: Proposal, record: CaseRecord, settings: ProbeSettings,
                        sandbox: Sandbox | None) -> Verification:
    """The reference check the engine would make now (:meth:`ProbeRun._verify`), from what the
    record's solution printed when that program is unchanged.
    """
    case = proposal.case
    if trusted(proposal) or not proposal.solution or not settings.verify_references:
        ok = trusted(proposal)
        return Verification(case.reference, ok, None, "vouched for by its source" if ok else "not verified")
    if computes_nothing(proposal.solution):
        return Verification(case.reference, False, None, COMPUTES_NOTHING)
    known, output = _stored_output(record, proposal.solution)
    if known:
        return await check_printed(case, output)
    return await verify_reference(proposal, sandbox or Sandbox())


def _stored_decision(meta: Mapping[str, Any]) -> tuple[BandDecision, bool, BandPosterior, float | None] | None:
    """The band decision a record kept (:func:`~frontier_qa.probing._classify.posterior_note`), if it kept one."""
    note = meta.get(POSTERIOR_KEY)
    if not isinstance(note, Mapping):
        return None
    try:
        verdict = BandDecision(note["verdict"])
        if verdict is BandDecision.CONTINUE:
            return None
        low, high = (float(x) for x in note["credible"])
        # the posterior mean is not kept; the reason text never shows it
        posterior = BandPosterior(float(note["below"]), float(note["inside"]), float(note["above"]),
                                  (low + high) / 2, (low, high), float(note["level"]))
        confidence = note.get("confidence")
        return verdict, bool(note["forced"]), posterior, None if confidence is None else float(confidence)
    except (KeyError, TypeError, ValueError):
        return None


_Judged = tuple[Case, CaseClass, str, bool, "bool | None", dict[str, Any]]


async def _judge(record: CaseRecord, case: Case, check: Verification, settings: ProbeSettings,
                 prober: CaseProber, *, rescore: bool) -> _Judged | str:
    """Classify the stored samples against the new inputs, as :meth:`CaseProber.probe` would.

    Returns:
        ``(case, class, reason, verified, majority_correct, record fields to update)``, or why
        the samples cannot decide the case (it must be probed again).
    """
    band = (settings.band.low, settings.band.high)
    update: dict[str, Any] = {}
    meta = dict(case.metadata)
    samples = record.samples
    majority, n_unparseable, n_failed = record.majority, record.n_unparseable, record.n_failed
    p_hat = record.p_hat
    if record.case_class is CaseClass.UNRESOLVED and not rescore:
        # sampling stopped before a decision: no reference makes it decided (classify_case)
        if POSTERIOR_KEY in record.case.metadata:
            meta[POSTERIOR_KEY] = record.case.metadata[POSTERIOR_KEY]
        correct = await _matches(prober, majority, case)
        return (replace(case, metadata=meta), CaseClass.UNRESOLVED, _class_reason(record), check.verified,
                correct, update)
    verdict: BandDecision
    stored = None if rescore else _stored_decision(record.case.metadata)
    if stored is None:
        if rescore:  # the answers read again from the stored texts, in the new format
            texts = [Trajectory(text=s.text, error=s.error, sample_index=s.sample_index) for s in samples]
            answers = answers_of(case, texts)
            samples = [s.model_copy(update={"answer": a}) for s, a in zip(samples, answers, strict=True)]
        consistency = await prober.score_answers(case, [None if s.error else s.answer for s in samples],
                                                 [s.error is not None for s in samples])
        decision = (prober.fixed_decision(consistency) if prober.policy is None
                    else decide_consistency(consistency, prober.policy))
        if decision.verdict is BandDecision.CONTINUE:
            return f"the {record.k} stored samples do not decide the band (the probe would sample more)"
        verdict, forced, posterior = decision.verdict, decision.forced, decision.posterior
        confidence = confidence_of(prober.policy, verdict)
        meta[POSTERIOR_KEY] = posterior_note(posterior, verdict, forced=forced, confidence=confidence)
        if rescore:
            majority, n_unparseable, n_failed = consistency.majority, consistency.n_unparseable, consistency.n_failed
            p_hat = consistency.p_hat
            top = consistency.clusters[0].size if consistency.clusters else 0
            level = FIXED_K_LEVEL if prober.policy is None else prober.policy.level
            low, high = wilson_interval(top, consistency.k, level)
            interval = Interval(low=low, high=high, method="wilson", confidence=level)
            update = {"samples": samples, "p_hat": p_hat, "interval": interval, "majority": majority,
                      "clusters": [ClusterCount(answer=c.representative, count=c.size)
                                   for c in consistency.clusters if c.size > 0],
                      "n_unparseable": n_unparseable, "n_failed": n_failed,
                      "rounds": [Round(k=consistency.k, p_hat=p_hat, interval=interval)]}
    else:
        verdict, forced, posterior, confidence = stored
        meta[POSTERIOR_KEY] = record.case.metadata[POSTERIOR_KEY]
    reference, verified = case.reference, check.verified
    correct = await _matches(prober, majority, case)
    judged = None
    note = record.case.metadata.get("judge")
    if (verdict is BandDecision.ABOVE and not forced and not verified and majority is not None
            and isinstance(note, Mapping)):
        # the judge was asked about this majority of this task; its word stands (no new call)
        judged = note.get("verdict") if isinstance(note.get("verdict"), bool) else None
        meta["judge"] = dict(note)
        if judged:
            if reference is not None and correct is False:
                meta["stated_reference"] = reference
            reference, verified, correct = majority, True, True
        elif judged is False:
            correct = False
    k = record.k - n_failed
    case_class, reason = classify_case(CaseEvidence(
        verdict=verdict, majority=majority, reference=reference, reference_verified=verified, majority_correct=correct,
        judge_verdict=judged, n_answered=k - n_unparseable, n_unparseable=n_unparseable, band=band,
        p_hat=p_hat if record.k else None, forced=forced, posterior=posterior, confidence=confidence, k=k,
        fixed=confidence is None, answer_format=case.answer_format, task_checked=task_checked(case, verified),
        unchecked_why=unchecked_why(case)))
    return replace(case, reference=reference, metadata=meta), case_class, reason, verified, correct, update


async def _paths(record: CaseRecord, case: Case, settings: ProbeSettings, prober: CaseProber,
                 update: Mapping[str, Any]) -> dict[str, Any]:
    """The samples' paths and misses, the path finding and pass^k, judged again from the stored steps
    and answers (the probe's rules, no target call).
    """
    samples = update.get("samples", record.samples)
    views = [view_of_steps(s.steps, failed=s.error is not None) for s in samples]
    found = await judge_paths(case, views, [None if s.error else s.answer for s in samples], settings,
                              prober.policy, prober.judge_answer)
    samples = [s.model_copy(update={"path": p, "misses": m})
               for s, p, m in zip(samples, found.paths, found.misses, strict=True)]
    return {"samples": samples, "path": found.path, "pass_k": found.pass_k}


async def _matches(prober: CaseProber, majority: str | None, case: Case) -> bool | None:
    """Whether the majority is equivalent to the case's reference (``None``: one of them is missing)."""
    if case.reference is None or majority is None:
        return None
    return await prober.matches(majority, case.reference, case.answer_format)


def _relabelled(record: CaseRecord, proposal: Proposal, new: CaseInputs) -> Case:
    """The recorded case with the source's new topic and metadata (the rest unchanged, the
    engine's notes kept: the reference, its check and the judge's word all still hold).
    """
    old = record.case.metadata
    meta = {k: v for k, v in old.items() if k in ENGINE_KEYS and k not in ("source", PASS_RATE_KEY)}
    meta.update(new.metadata or {})
    meta["source"] = proposal.case.metadata.get("source", proposal.source)
    if new.predicted_pass_rate is not None:
        meta[PASS_RATE_KEY] = new.predicted_pass_rate
    return stamped(replace(record.case, topic=proposal.case.topic, metadata=meta), new)


def _class_reason(record: CaseRecord) -> str:
    """Why the record was classified so, without what an earlier refresh put in front."""
    note = record.case.metadata.get(REFRESHED_KEY)
    if isinstance(note, Mapping) and note.get("run_id") == record.run_id and isinstance(note.get("class_reason"), str):
        return str(note["class_reason"])
    return record.reason or ""


def _record(record: CaseRecord, case: Case, case_class: CaseClass, how: str, change: str, class_reason: str,
            run_id: str, *, verified: bool, majority_correct: bool | None, **update: Any) -> CaseRecord:
    """The refreshed observation: the record's samples under the new case, written under ``run_id``."""
    meta = {**case.metadata, REFRESHED_KEY: {"run_id": run_id, "from_run": record.run_id, "change": change,
                                             "class_reason": class_reason}}
    now = utc_now()
    fields = {name: getattr(record, name) for name in CaseRecord.model_fields}
    fields.update({
        "case": replace(case, reference_verified=verified, metadata=meta), "run_id": run_id,
        "case_class": case_class, "majority_correct": majority_correct,
        "reason": f"{change}: {how}; {class_reason}" if class_reason else f"{change}: {how}",
        "cost": Cost(),  # nothing was spent: the samples were paid for by the record they come from
        "started_at": now, "finished_at": now, "verdict": None, "frontier_qa_version": __version__,
        "schema_version": SCHEMA_VERSION, **update,
    })
    return CaseRecord(**fields)


__all__ = ["Action", "Refresh", "refresh_case", "refresh_prober"]
