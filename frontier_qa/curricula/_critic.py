"""SAGE's question critic: a model scores each proposed question 1–10 before it is probed.

SAGE (§4.5, Fig. 8) has a Critic agent grade the Challenger's questions for solvability,
logical soundness, clarity, appropriateness and conciseness, answering ``<score>N</score>``
with N in 1..10, and keeps questions whose normalised score passes the quality threshold
α = 0.7 (§5, "Training Dynamics"). The critic samples at temperature 0.1 (Table 7 of SAGE's
appendix). Our copy of the paper omits its normalisation (Eq. 2); we take s / 10, so α = 0.7
keeps scores of 7 and above.

:class:`SageCritic` implements the validator's ``Critic`` protocol: ``await judge(proposal)``
returns a :class:`TaskCritique`. The probe validator (``frontier_qa.probing._validation``) imports
:class:`TaskCritique` from here.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re

from frontier_qa.curricula._templates import tool_description, tool_name
from frontier_qa.errors import ConfigError
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._validation import TaskCritique, ask_once
from frontier_qa.target import Case, Sampling, Target

log = logging.getLogger(__name__)

SAGE_THRESHOLD = 0.7
"""SAGE's quality threshold α on the normalised score s / 10."""

SAGE_SAMPLING = Sampling(temperature=0.1, top_p=1.0, max_tokens=1024)
"""SAGE's critic temperature (0.1); room for the analysis the prompt asks for before the score."""

SAGE_QUESTION_PROMPT = """Role: Question Quality Critic Agent

Description:

You are an expert evaluator. Your task is to assess the quality of a generated question for reasoning benchmarks.

Input:

- Question to evaluate: {question}

Evaluate the question based on the following criteria:

<think>

Evaluation Criteria:

- Solvability: Is the question solvable with sufficient information? No internal contradictions?
- Logical Soundness: Is the question logically coherent and does not violate common sense?
- Clarity: Is the wording unambiguous with clear objectives and constraints?
- Appropriateness: Is it safe, relevant, and actually in the form of a question?
- Conciseness: Is it free from redundant repetition or unnecessary complexity?

Scoring Guidelines:

- 8-10: Excellent question - fully clear, logically sound, solvable, self-contained, and concise. Appropriate for evaluation purposes.
- 4-7: Acceptable question - has some ambiguity or missing details but no fatal flaws in solvability or logic.
- 1-3: Poor question - unsolvable, contradictory, violates common sense, unsafe, too open-ended, or not a valid question.

Critical Rule:

If any unsolvability or commonsense violation exists, score must be [1-3].

[Write your detailed analysis here, addressing each criterion.]

</think>

Provide your final score.

Important:

Output only one tag like <score>7</score> (replace 7 with your integer score 1-10)."""
"""SAGE Fig. 8, "Critic Agent Prompt (Question)", verbatim but for ``{question}``."""

_SCORE_TAG = re.compile(r"<score>\s*([-+]?\d+(?:\.\d+)?)\s*(?:/\s*10\s*)?</score>", re.I)
# Fallbacks for critics that drop the tag: "Score: 7", "final score = 8/10", "**Score:** 6".
_SCORE_WORD = re.compile(r"\bscore\b[*_\s]*(?:is|of|[:=])?[*_\s]*([-+]?\d+(?:\.\d+)?)(?:\s*/\s*10)?", re.I)
_OUT_OF_TEN = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*/\s*10\b")


def parse_score(text: str | None, *, scale: float = 10.0) -> float | None:
    """The critic's raw score: the last ``<score>N</score>``, else the last "score: N" / "N/10".

    Returns:
        N, or ``None`` when there is none or it lies outside [0, ``scale``].
    """
    if not text:
        return None
    for pattern in (_SCORE_TAG, _SCORE_WORD, _OUT_OF_TEN):
        found = pattern.findall(text)
        if found:
            value = float(found[-1])
            return value if 0.0 <= value <= scale and math.isfinite(value) else None
    return None


def render_question(proposal: Proposal) -> str:
    """What the critic reads: the question, plus the tools or agent it is meant for."""
    case = proposal.case
    text = case.prompt.strip()
    if case.tools:
        listing = "\n".join(f"  - {tool_name(t)}" + (f": {d}" if (d := tool_description(t)) else "")
                            for t in case.tools)
        text += f"\n  (The solver may call these tools:\n{listing})"
    agent = case.metadata.get("agent_description") if isinstance(case.metadata, dict) else None
    if isinstance(agent, str) and agent.strip():
        text += f"\n  (The question is a request to this agent: {agent.strip()})"
    return text


class SageCritic:
    """SAGE's question critic on any target (SAGE §4.5, Fig. 8).

    Args:
        model: the critic model (a stronger model than the target is best).
        threshold: α, the least normalised score (s / 10) that passes, in [0, 1].
        sampling: the critic's sampling (default :data:`SAGE_SAMPLING`); its ``seed`` is
            derived from the question, so a rerun asks the same request (cache hit).
        on_error: ``"reject"`` (default) or ``"accept"`` a proposal when the critic returned no
            text or no score; the verdict's reason says which happened either way.

    Raises:
        ConfigError: threshold outside [0, 1] or an unknown ``on_error``.
    """

    def __init__(self, model: Target, threshold: float = SAGE_THRESHOLD, *,
                 sampling: Sampling = SAGE_SAMPLING, on_error: str = "reject") -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"critic threshold={threshold} must be in [0, 1] (a share of the top score 10)")
        if on_error not in ("reject", "accept"):
            raise ConfigError(f"on_error={on_error!r} is not understood", hint="use 'reject' or 'accept'")
        self.model = model
        self.threshold = threshold
        self.sampling = sampling
        self.on_error = on_error

    def request(self, proposal: Proposal) -> Case:
        """The case sent to the critic model for ``proposal``."""
        prompt = SAGE_QUESTION_PROMPT.format(question=render_question(proposal))
        digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
        return Case(id=f"sage-critic-{digest[:16]}", prompt=prompt, topic=proposal.case.topic, answer_format="text")

    async def judge(self, proposal: Proposal) -> TaskCritique:
        """Score ``proposal``'s question; passed when s / 10 ≥ threshold.

        Raises:
            FrontierQAError: the critic model failed for good (budget spent, unavailable).
        """
        if not proposal.case.prompt.strip():
            return TaskCritique(0.0, False, "empty question: nothing for the critic to judge")
        text, why = await ask_once(self.model, self.request(proposal), self.sampling)
        if text is None:
            return self._error(f"the critic returned no text ({why})")
        raw = parse_score(text)
        if raw is None:
            shown = " ".join(text.split())[-160:]
            return self._error(f"the critic gave no score 1-10 (expected <score>N</score>): …{shown!r}")
        score = raw / 10.0
        passed = score >= self.threshold - 1e-12
        relation = "≥" if passed else "<"
        reason = f"SAGE critic score {raw:g}/10 {relation} threshold {self.threshold * 10:g}/10"
        # SAGE's rubric is solvability, soundness and clarity: a pass is its word that the task is well-posed
        return TaskCritique(score, passed, reason, "well-posed" if passed else "ill-posed", f"SAGE critic {self.model.id}")

    def _error(self, reason: str) -> TaskCritique:
        accept = self.on_error == "accept"
        verdict = "accepted" if accept else "rejected"
        log.warning("the SAGE critic could not judge a question: %s; %s (on_error=%r)", reason, verdict, self.on_error)
        return TaskCritique(0.0, accept, f"{reason}; {verdict} (on_error={self.on_error!r})")


__all__ = ["SAGE_QUESTION_PROMPT", "SAGE_SAMPLING", "SAGE_THRESHOLD", "TaskCritique", "SageCritic", "parse_score",
           "render_question"]
