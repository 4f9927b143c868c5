"""Curriculum rewards (Agent0 §3.2): uncertainty, tool use, repetition, format, composite, and
the path term (issue 32): the uncertainty reward of the executor's majority *path* share.

Each reward is a pure function of numbers and strings, and each is also offered in TRL's
reward-function shape ``(prompts, completions, **columns) -> list[float | None]`` (see
:func:`curriculum_reward_func` and friends), so a GRPO trainer can use them directly.

Where this departs from the reference code (docs/method.md §7):

* The uncertainty reward is never gated by agreement with the curriculum's own reference
  answer (defect 2); the reference answer is parsed whole from the last ``\\boxed{}``, never as
  ``answers[-1]`` of a string (defect 1).
* Tool calls are counted from the executor's trajectories (executed calls only), never from
  ```` ```output ```` markers in the curriculum's own text (defect 3).

Two presets: :data:`PAPER` (Agent0 Eq. 2–5, λ_tool = 0.6, C = 4) and :data:`AGENT0_COMPAT`
(the reference code's constants: min(p̂, 1 − p̂), γ = 0.05, C = 4, λ_rep = 1), both free of
the defects above.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, cast

from pydantic import Field

from frontier_qa._frozen import frozen_value
from frontier_qa.errors import ConfigError
from frontier_qa.scoring._paths import path_counts
from frontier_qa.scoring._repetition import DEFAULT_THRESHOLD, TextEncoder, repetition_penalty
from frontier_qa.scoring.bands import check_p_hat

# ---------------------------------------------------------------------------------------------
# Uncertainty (Agent0 Eq. 2)


def uncertainty_reward(p_hat: float, *, compat: bool = False) -> float:
    """R_unc = 1 − 2|p̂ − 0.5| (Agent0 Eq. 2): 1 at p̂ = 0.5, 0 at p̂ ∈ {0, 1}.

    Args:
        p_hat: the executor's self-consistency, majority count / k, in [0, 1].
        compat: use the reference code's min(p̂, 1 − p̂) instead, exactly half of Eq. 2.

    Raises:
        ConfigError: p̂ is not a number in [0, 1].
    """
    p = check_p_hat(p_hat)
    return min(p, 1.0 - p) if compat else 1.0 - 2.0 * abs(p - 0.5)


# ---------------------------------------------------------------------------------------------
# Tool use (Agent0 Eq. 3, with the QA notes' task-text demand)

ToolCounts = Sequence[Any] | float | int
"""Per-task tool use: executed-call counts (ints) or trajectories (objects with
``n_tool_calls``, e.g. :class:`frontier_qa.target.Trajectory`), one per executor sample;
or a single number, already the mean count over the task's samples."""

# (category, weight, pattern). Weights sum to 1, so tool_demand ∈ [0, 1] by construction.
# A category counts once however often its cues occur: repeating trigger words buys nothing.
_TOOL_DEMAND_CUES: tuple[tuple[str, float, re.Pattern[str]], ...] = tuple(
    (name, weight, re.compile(pattern))
    for name, weight, pattern in (
        # Numbers too large to handle reliably by hand: 4+ digit integers, big powers, factorials.
        ("large_numbers", 0.30,
         r"\b\d{1,3}(?:,\d{3})+\b|\b\d{4,}\b|\d\s*\^\s*\{?\s*\d{2,}|\b10\s*\^\s*\{?\s*\d|\d\s*!"
         r"|\b(?:million|billion|trillion)s?\b"),
        # Counting / enumerating a set: brute force is the natural tool use.
        ("enumeration", 0.25,
         r"\bhow many\b|\bcount(?:s|ing)?\b|\bnumber of\b|\benumerat\w*|\blist (?:all|every)\b"
         r"|\bsum of all\b|\ball (?:possible|positive|integers?|pairs|triples|ordered|distinct)\b"
         r"|\\[lc]dots|\.\.\.|\bsubsets?\b|\bpermutations?\b|\barrangements?\b|\bcombinations?\b"),
        # Processes that run for many steps: recurrences, repeated moves, loops.
        ("iteration", 0.20,
         r"\biterat\w*|\brepeat\w*|\brecursi\w*|\brecurrence\b|\bsequence\b|\bfor (?:each|every)\b"
         r"|\buntil\b|\bsteps?\b|\bmoves?\b|\brounds?\b|a_\{?n\s*\+\s*1"),
        # Chance processes that a simulation can estimate or check.
        ("simulation", 0.15,
         r"\bsimulat\w*|\brandom\w*|\bmonte carlo\b|\bexpected (?:value|number)\b|\bprobability\b"),
        # Exact arithmetic or numerics: precision, modular arithmetic, primes, digits.
        ("numeric", 0.10,
         r"\bdecimal places?\b|\bapproximat\w*|\bnumerical\w*|\bnearest (?:integer|whole number|tenth"
         r"|hundredth|thousandth)\b|\bsignificant (?:figures|digits)\b|\bremainder\b|\bmod(?:ulo)?\b"
         r"|\bprimes?\b|\bdigits?\b"),
    )
)


def tool_demand_cues(text: str) -> tuple[str, ...]:
    """The tool-demand categories whose cues occur in ``text`` (see :func:`tool_demand`)."""
    lowered = text.lower()
    return tuple(name for name, _, pattern in _TOOL_DEMAND_CUES if pattern.search(lowered))


def tool_demand(text: str) -> float:
    """How much a task's text asks for computation, a heuristic score in [0, 1].

    The QA notes (open problem 3) ask for tool demand read from the task as well as tool use
    seen in the executor. This is a transparent keyword score: the sum of the weights of the
    categories whose cues occur (case-insensitive) — large numbers 0.30 (4+ digit integers,
    exponents ≥ 10, powers of ten, factorials), enumeration 0.25 ("how many", "number of",
    "all pairs", ellipses), iteration 0.20 (recurrences, "for each", steps, moves), simulation
    0.15 (random, probability, expected value) and numeric 0.10 (decimal places, remainders,
    primes, digits). It is a weak prior that a trained curriculum could game by adding words,
    which is why :data:`PAPER` weights it 0 and trajectories carry the signal.

    Returns:
        A score in [0, 1]; 0 for text without any cue (and for empty text).
    """
    fired = set(tool_demand_cues(text))
    return min(1.0, math.fsum(weight for name, weight, _ in _TOOL_DEMAND_CUES if name in fired))


def mean_capped_tool_calls(tool_calls: ToolCounts, cap: int) -> float:
    """Mean over the task's trajectories of min(N_i, C), in [0, C].

    Args:
        tool_calls: counts or trajectories per executor sample, or one number that is already
            the per-task mean (then it is capped as a whole: min(mean, C)).
        cap: C, the most calls that are rewarded per trajectory.

    Raises:
        ConfigError: no trajectories, or a count that is negative or not a number.
    """
    if isinstance(tool_calls, numbers.Real) and not isinstance(tool_calls, bool):
        return min(_check_count(tool_calls), float(cap))
    counts = [_trajectory_calls(item) for item in cast("Sequence[Any]", tool_calls)]  # one number was handled above
    if not counts:
        raise ConfigError(
            "tool reward needs at least one executor trajectory; got none",
            hint="pass one tool-call count per executor sample, or None when the executor did not run",
        )
    return math.fsum(min(n, float(cap)) for n in counts) / len(counts)


def tool_reward(
    tool_calls: ToolCounts | None,
    task_text: str | None = None,
    *,
    gamma: float = 0.25,
    cap: int = 4,
    executor_weight: float = 1.0,
    text_weight: float = 0.0,
) -> float:
    """R_tool = γ·(w_exec·mean_i min(N_i, C) + w_text·C·demand(x)) (Agent0 Eq. 3, generalised).

    With the defaults (w_exec = 1, w_text = 0) this is Eq. 3, γ·min(N_tool, C), with N_tool
    counted in the executor's trajectories and averaged over the task's k samples. The
    task-text term is scaled by C so both terms share the same maximum γ·C.

    Args:
        tool_calls: executed tool calls per executor sample (see :data:`ToolCounts`).
            May be ``None`` only when ``executor_weight`` is 0.
        task_text: the task (question) text, for the demand term; needed when ``text_weight`` > 0.
        gamma: γ, reward per rewarded call.
        cap: C, the most calls rewarded per trajectory.
        executor_weight: w_exec, weight of the executor's observed tool use.
        text_weight: w_text, weight of :func:`tool_demand` of the task text.

    Returns:
        A reward in [0, γ·C·(w_exec + w_text)].
    """
    total = 0.0
    if executor_weight:
        if tool_calls is None:
            raise ConfigError(
                "tool reward needs the executor's tool calls (executor_weight > 0) but got None",
                hint="pass per-sample tool-call counts, or set executor_weight=0",
            )
        total += executor_weight * mean_capped_tool_calls(tool_calls, cap)
    if text_weight:
        if task_text is None:
            raise ConfigError("tool reward with text_weight > 0 needs the task text; got None")
        total += text_weight * cap * tool_demand(task_text)
    return gamma * total


# ---------------------------------------------------------------------------------------------
# Path (issue 32): a task whose samples split between paths is at the frontier of *how* the agent works


def path_reward(paths: Sequence[str | None], *, compat: bool = False) -> float | None:
    """R_path in [0, 1]: :func:`uncertainty_reward` of the majority path's share of the task's samples
    (1: they split evenly between two paths; 0: all take one, so the task says nothing about tool choice).

    Args:
        paths: each sample's path (:func:`frontier_qa.scoring._paths.path_key`); ``None`` for a
            failed sample, left out as from the path's p̂. ``None`` is returned when none has a path.
        compat: min(p̂, 1 − p̂) instead of Eq. 2's form, as for R_unc.
    """
    counts = path_counts(paths)
    if not counts:
        return None
    return uncertainty_reward(counts[0][1] / sum(n for _, n in counts), compat=compat)


# ---------------------------------------------------------------------------------------------
# Format (Agent0 Table 7: "<question>…</question>" then "\boxed{answer}")

_QUESTION_RE = re.compile(r"<question>(.*?)</question>", re.DOTALL)


def parse_curriculum_output(text: str) -> tuple[str | None, str | None]:
    """Split a curriculum completion into (question, reference answer).

    The question is the last ``<question>…</question>`` block, stripped (as the reference
    takes ``questions[-1]``); ``None`` if there is none or it is blank. The reference answer is
    the content of the last ``\\boxed{…}`` (nested braces kept) after that block, or anywhere
    when there is no block; ``None`` if absent. A ``\\boxed`` inside the question is part of
    the question, not the answer.
    """
    from frontier_qa.scoring.answers import extract_boxed  # lazy: answers is a sibling module

    matches = list(_QUESTION_RE.finditer(text))
    question = matches[-1].group(1).strip() if matches else None
    tail = text[matches[-1].end():] if matches else text
    reference = extract_boxed(tail)
    return (question or None), reference


def format_reward(text: str, *, require_reference: bool = False) -> float:
    """R_format: 1.0 when the completion holds a non-empty question, else 0.0.

    Args:
        text: the curriculum's completion.
        require_reference: also require a ``\\boxed{}`` reference answer after the question.
            Off by default: frontier-qa treats the generator's reference as optional and
            unverified, and never lets it gate the uncertainty signal.
    """
    question, reference = parse_curriculum_output(text)
    ok = question is not None and (reference is not None or not require_reference)
    return 1.0 if ok else 0.0


# ---------------------------------------------------------------------------------------------
# Composite (Agent0 Eq. 5)


def composite_reward(
    format_score: float,
    uncertainty: float,
    tool: float,
    repetition: float,
    *,
    lambda_unc: float = 1.0,
    lambda_tool: float = 0.6,
    path: float = 0.0,
    lambda_path: float = 0.0,
) -> float:
    """R_C = R_format·max(0, λ_unc·R_unc + λ_tool·R_tool + λ_path·R_path − R_rep) (Agent0 Eq. 5,
    with the path term; λ_path = 0 by default: Eq. 5 as published).

    Args:
        format_score: R_format, 1 or 0 (any gate value in [0, 1] is accepted).
        uncertainty: R_unc.
        tool: R_tool.
        repetition: R_rep, already scaled by λ_rep.
        lambda_unc: λ_unc.
        lambda_tool: λ_tool.
        path: R_path (:func:`path_reward`).
        lambda_path: λ_path.

    Returns: a reward >= 0.
    """
    if not 0.0 <= format_score <= 1.0:
        raise ConfigError(f"format_score must be in [0, 1]; got {format_score!r}")
    return format_score * max(0.0, lambda_unc * uncertainty + lambda_tool * tool + lambda_path * path - repetition)


_Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]


@frozen_value
class RewardConfig:
    """Every constant of the curriculum reward. Use a preset and ``dataclasses.replace``.

    The same class (with the trainer's own keys added) is the ``reward`` section of a curriculum
    training config (:class:`frontier_qa.train.config.RewardSection`).

    Attributes:
        lambda_unc: λ_unc, weight of R_unc in Eq. 5.
        lambda_tool: λ_tool, weight of R_tool in Eq. 5.
        tool_gamma: γ in Eq. 3, reward per rewarded tool call.
        tool_cap: C in Eq. 3, most calls rewarded per trajectory.
        tool_executor_weight: weight of executed calls seen in trajectories.
        tool_text_weight: weight of the task text's :func:`tool_demand`.
        lambda_rep: λ_rep in Eq. 4.
        rep_threshold: τ, the clustering distance threshold (BLEU distance unless an
            embedder/embeddings are used).
        compat_uncertainty: use min(p̂, 1 − p̂) instead of Eq. 2 (for R_path too).
        lambda_path: λ_path, weight of R_path (:func:`path_reward`; 0: Eq. 5 as published).
        require_reference: the format gate also needs a ``\\boxed{}`` reference answer.
        canonical_order: make repetition penalties independent of batch order.
    """

    lambda_unc: Annotated[_Weight, Field(description="λ_unc, weight of R_unc (Eq. 5)")] = 1.0
    lambda_tool: Annotated[_Weight, Field(description="λ_tool, weight of R_tool (Eq. 5)")] = 0.6
    tool_gamma: Annotated[_Weight, Field(description="γ, reward per rewarded tool call (Eq. 3)")] = 0.25
    tool_cap: Annotated[int, Field(ge=0, strict=True, description="C, most calls rewarded (Eq. 3)")] = 4
    tool_executor_weight: Annotated[_Weight, Field(description="tool calls seen in trajectories")] = 1.0
    tool_text_weight: Annotated[_Weight, Field(description="tool demand read from the task text")] = 0.0
    lambda_rep: Annotated[_Weight, Field(description="λ_rep, weight of R_rep (Eq. 4)")] = 1.0
    rep_threshold: Annotated[float, Field(gt=0, allow_inf_nan=False, description="τ, the clustering distance "
                                                                                 "threshold")] = DEFAULT_THRESHOLD
    compat_uncertainty: Annotated[bool, Field(description="min(p̂, 1 − p̂) instead of Eq. 2")] = False
    require_reference: Annotated[bool, Field(description="the format gate also needs a \\boxed{} answer")] = False
    canonical_order: Annotated[bool, Field(description="repetition penalties independent of batch order")] = True
    lambda_path: Annotated[_Weight, Field(description="λ_path, weight of R_path: uncertainty of the "
                                                      "executor's majority path share (0: off)")] = 0.0

    @property
    def needs_tool_calls(self) -> bool:
        """Whether the composite reward reads the executor's tool calls."""
        return self.lambda_tool > 0 and self.tool_gamma > 0 and self.tool_executor_weight > 0

    def uncertainty(self, p_hat: float) -> float:
        """R_unc under this config."""
        return uncertainty_reward(p_hat, compat=self.compat_uncertainty)

    def path(self, paths: Sequence[str | None] | None) -> float | None:
        """R_path under this config (unweighted by λ_path); ``None`` without paths or when it is off."""
        return None if paths is None or not self.lambda_path else path_reward(paths, compat=self.compat_uncertainty)

    def composite(self, uncertainty: float, tool: float | None, repetition: float, path: float | None) -> float:
        """R_C of a task that passed the format gate, with this config's weights."""
        return composite_reward(1.0, uncertainty, tool or 0.0, repetition, lambda_unc=self.lambda_unc,
                                lambda_tool=self.lambda_tool, path=path or 0.0, lambda_path=self.lambda_path)

    def tool(self, tool_calls: ToolCounts | None, task_text: str | None = None) -> float:
        """R_tool under this config (unweighted by λ_tool)."""
        return tool_reward(
            tool_calls if self.tool_executor_weight else None,
            task_text,
            gamma=self.tool_gamma,
            cap=self.tool_cap,
            executor_weight=self.tool_executor_weight,
            text_weight=self.tool_text_weight,
        )


PAPER = RewardConfig()
"""Agent0 as published. λ_tool = 0.6 and C = 4: §4.1 (Implementation Details). Eq. 2 for R_unc.
λ_unc, γ and λ_rep are not reported: λ_unc = 1 and λ_rep = 1 as in R-Zero and the reference
code; γ = 1/C = 0.25 so that γ·min(N, C) spans [0, 1] like R_unc. τ = 0.5 from the reference."""

AGENT0_COMPAT = RewardConfig(
    lambda_unc=1.0,  # reference: min(score, 1 - score) added unweighted
    lambda_tool=1.0,  # reference: calculate_tool_reward(...) added unweighted
    tool_gamma=0.05,  # reference: calculate_tool_reward(weight=0.05)
    tool_cap=4,  # reference: calculate_tool_reward(cap=4)
    lambda_rep=1.0,  # reference: cluster share subtracted unweighted
    rep_threshold=0.5,  # reference: cluster_share_per_problem(distance_threshold=0.5)
    compat_uncertainty=True,
)
"""The reference code's constants (aiming-lab/Agent0 ``curriculum_reward.py``) with Eq. 5's
clip and format gate, and without its defects: p̂ is never zeroed by agreement with the
reference answer, and tool calls come from executor trajectories, not ```` ```output ```` markers."""

REWARD_PRESETS = {"paper": PAPER, "agent0-compat": AGENT0_COMPAT}
"""The presets a config or a command names (``reward.preset``, ``frontier-qa score --preset``)."""


def _check_count(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not float(value) >= 0 or math.isinf(value):
        raise ConfigError(
            f"a tool-call count must be a finite number >= 0; got {value!r}",
            hint="count executed calls per trajectory (Trajectory.n_tool_calls)",
        )
    return float(value)


def _trajectory_calls(item: Any) -> float:
    # Trajectory.n_tool_calls counts *executed* calls: the tool ran and returned or failed.
    calls = getattr(item, "n_tool_calls", item)
    return _check_count(calls)


# ---------------------------------------------------------------------------------------------
# A batch of curriculum completions, and TRL's reward-function shape


@dataclass(frozen=True)
class CurriculumScore:
    """Every term of R_C for one completion of a batch.

    Attributes:
        question: the parsed task, ``None`` when the completion holds none.
        reference: the parsed ``\\boxed{}`` reference answer (unverified), or ``None``.
        format: R_format, 1.0 or 0.0.
        uncertainty: R_unc, ``None`` without p̂.
        tool: R_tool (before λ_tool), ``None`` without the executor's tool calls when needed.
        repetition: R_rep (already times λ_rep) over the whole batch.
        reward: R_C (Eq. 5); 0.0 when the format gate fails, ``None`` when a needed input is
            missing (TRL reads ``None`` as "not applicable").
        path: R_path (before λ_path), ``None`` when λ_path is 0 or no sample has a path.
    """

    question: str | None
    reference: str | None
    format: float
    uncertainty: float | None
    tool: float | None
    repetition: float
    reward: float | None
    path: float | None = None


def score_curriculum_batch(
    texts: Sequence[str],
    p_hats: Sequence[float | None],
    tool_calls: Sequence[ToolCounts | None] | None = None,
    *,
    config: RewardConfig = PAPER,
    embeddings: Any | None = None,
    embedder: TextEncoder | None = None,
    paths: Sequence[Sequence[str | None] | None] | None = None,
) -> list[CurriculumScore]:
    """Score B curriculum completions with Agent0 Eq. 2–5.

    Args:
        texts: the B completions (``<question>…</question>`` then ``\\boxed{…}``).
        p_hats: the executor's p̂ per completion, ``None`` where the executor did not run.
        tool_calls: executed tool calls per completion (see :data:`ToolCounts`), or ``None``.
        paths: the executor samples' paths per completion (for R_path), or ``None``.
        config: the constants.
        embeddings: ``(B, dim)`` vectors of the parsed questions: cosine distance replaces BLEU.
        embedder: an object with ``.encode(texts)``, used on the parsed questions instead.

    Returns:
        One :class:`CurriculumScore` per completion. Repetition is computed over all B parsed
        questions (a failed parse counts as an empty question: its own cluster, still in B).
    """
    n = len(texts)
    tool_calls = [None] * n if tool_calls is None else list(tool_calls)
    path_lists = [None] * n if paths is None else list(paths)
    if len(p_hats) != n or len(tool_calls) != n or len(path_lists) != n:
        raise ConfigError(f"got {n} completions, {len(p_hats)} p_hat values, {len(tool_calls)} tool-call entries "
                          f"and {len(path_lists)} path lists",
                          hint="pass one p_hat, tool-call entry and path list per completion (None where missing)")
    parsed = [parse_curriculum_output(text) for text in texts]
    questions = [question or "" for question, _ in parsed]
    penalties = repetition_penalty(
        questions,
        weight=config.lambda_rep,
        threshold=config.rep_threshold,
        embeddings=embeddings,
        embedder=embedder,
        canonical_order=config.canonical_order,
    )
    scores = []
    for (question, reference), p_hat, calls, rep, sample_paths in zip(parsed, p_hats, tool_calls, penalties,
                                                                      path_lists, strict=True):
        ok = question is not None and (reference is not None or not config.require_reference)
        unc = None if p_hat is None else config.uncertainty(p_hat)
        # Without the executor's tool calls R_tool is unknown, unless it carries no weight.
        missing_calls = calls is None and config.tool_executor_weight > 0
        tool = None if missing_calls else config.tool(calls, question or "")
        path = config.path(sample_paths)
        if not ok:
            reward: float | None = 0.0  # Eq. 5's gate: no valid task, no reward, whatever else is known
        elif unc is None or (tool is None and config.needs_tool_calls):
            reward = None
        else:
            reward = config.composite(unc, tool, rep, path)
        scores.append(CurriculumScore(question, reference, 1.0 if ok else 0.0, unc, tool, rep, reward, path))
    return scores


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or conversational ``[{"role", "content"}]``.

    For a conversation the last assistant message counts; content given as a list of parts
    (``{"type": "text", "text": ...}``) is joined.
    """
    if isinstance(completion, str):
        return completion
    messages = [completion] if isinstance(completion, Mapping) else list(completion)
    assistant = [m for m in messages if isinstance(m, Mapping) and m.get("role", "assistant") == "assistant"]
    if not assistant:
        return ""
    content = assistant[-1].get("content") or ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))


_COMPONENTS = {
    "curriculum": "curriculum_reward",
    "uncertainty": "uncertainty_reward",
    "tool": "tool_reward",
    "format": "format_reward",
    "repetition": "repetition_penalty",
}


class CurriculumRewardFunction:
    """A reward callable in TRL's shape; build one with the ``*_func`` factories below.

    ``fn(prompts, completions, **columns) -> list[float | None]``. Columns read: ``p_hat``
    (one float or ``None`` per completion) and ``tool_calls`` (per completion: a list of
    counts or trajectories, a mean count, or ``None``). A missing column reads as all ``None``.
    Other TRL keyword arguments are ignored, except ``log_metric``, which receives batch
    means of each term from the composite reward. Picklable when its embedder is.
    """

    def __init__(self, component: str, config: RewardConfig = PAPER, *, embedder: TextEncoder | None = None):
        if component not in _COMPONENTS:
            raise ConfigError(f"unknown reward component {component!r}; choose one of {sorted(_COMPONENTS)}")
        self.component = component
        self.config = config
        self.embedder = embedder
        self.__name__ = _COMPONENTS[component]  # TRL logs rewards under the callable's __name__

    def __repr__(self) -> str:
        return f"CurriculumRewardFunction({self.component!r}, {self.config!r})"

    def __call__(
        self, prompts: Any = None, completions: Sequence[Any] = (), **columns: Any
    ) -> list[float | None]:
        texts = [completion_text(c) for c in completions]
        p_hats = column(columns, "p_hat", len(texts))
        calls = column(columns, "tool_calls", len(texts))
        scores = score_curriculum_batch(texts, p_hats, calls, config=self.config, embedder=self.embedder,
                                        paths=column(columns, "paths", len(texts)))
        log_metric = columns.get("log_metric")
        if self.component == "curriculum" and callable(log_metric):
            for term in ("format", "uncertainty", "tool", "repetition"):
                values = [getattr(s, term) for s in scores if getattr(s, term) is not None]
                if values:
                    log_metric(f"curriculum/{term}", math.fsum(values) / len(values))
        field = "reward" if self.component == "curriculum" else self.component
        return [getattr(score, field) for score in scores]


RewardFunc = Callable[..., list[float | None]]
"""TRL's reward-function shape: ``(prompts, completions, **columns) -> list[float | None]``."""


def curriculum_reward_func(
    config: RewardConfig = PAPER, *, embedder: TextEncoder | None = None
) -> RewardFunc:
    """R_C (Eq. 5) per completion, with repetition computed over the batch of completions."""
    return CurriculumRewardFunction("curriculum", config, embedder=embedder)


def uncertainty_reward_func(config: RewardConfig = PAPER) -> RewardFunc:
    """R_unc per completion from the ``p_hat`` column (``None`` where p̂ is missing)."""
    return CurriculumRewardFunction("uncertainty", config)


def tool_reward_func(config: RewardConfig = PAPER) -> RewardFunc:
    """R_tool (before λ_tool) from the ``tool_calls`` column and the parsed question."""
    return CurriculumRewardFunction("tool", config)


def format_reward_func(config: RewardConfig = PAPER) -> RewardFunc:
    """R_format per completion (1.0 / 0.0)."""
    return CurriculumRewardFunction("format", config)


def repetition_penalty_func(
    config: RewardConfig = PAPER, *, embedder: TextEncoder | None = None
) -> RewardFunc:
    """R_rep per completion over the batch; a *penalty* (>= 0): give it weight −1 in TRL."""
    return CurriculumRewardFunction("repetition", config, embedder=embedder)


def column(columns: Mapping[str, Any], name: str, n: int) -> list[Any]:
    """A TRL dataset column, one value per completion, gaps as ``None``.

    A gap is ``None``, NaN (how a pandas / Arrow table stores a missing value) or an empty
    list (an executor that did not run: "not applicable", not "zero tool calls"). A column
    that is absent is all gaps.

    Raises:
        ConfigError: the column has another number of values than there are completions.
    """
    values = columns.get(name)
    if values is None:
        return [None] * n
    values = list(values)
    if len(values) != n:
        raise ConfigError(
            f"column {name!r} has {len(values)} values for {n} completions",
            hint="TRL passes one value per completion; check how the column was built",
        )
    return [None if _is_missing(v) else v for v in values]


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 0
