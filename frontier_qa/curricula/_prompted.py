"""A curriculum that prompts a model for tasks and adapts in context to how the target did.

:class:`PromptedCurriculum` asks any :class:`~frontier_qa.target.Target` (an API model, a local
model, or a checkpoint of the curriculum trainer: ``from_spec("hf:/path/to/checkpoint")``) for
one task per proposal, with the templates of :mod:`frontier_qa.curricula._templates`:

* ``math`` / ``general``: Agent0's curriculum prompt (Table 7), answer format ``"boxed"``;
* ``tools``: Tool-R0 tasks over the user's own tool schemas, answer format ``"json:calls"``
  (compare with :func:`~frontier_qa.scoring._tool_calls.tool_calls_answer`);
* ``open_ended``: free-text questions, answer format ``"text"`` (semantic consistency);
* ``workflow``: multi-step requests to a described agent, answer format ``"text"`` (or
  ``"final_answer"``).

It adapts in context (Agent0's curriculum is trained instead; prompting is the training-free
stand-in): :meth:`PromptedCurriculum.observe` keeps a :class:`~frontier_qa.probing._curriculum_seam.History`,
and the next prompt shows recent frontier, too-easy, too-hard and rejected tasks.

Determinism: proposal ``i`` of round ``r`` samples with ``Sampling.seed`` =
:func:`derive_seed` (seed, r, i), and its tool specification and topic are drawn from the same
seed, so a resumed run sends the same requests and the runtime's cache answers them for free.

Invalid output is never dropped: it becomes a :class:`~frontier_qa.probing._curriculum_seam.Proposal` whose
case has an empty prompt, ``raw`` set to the model's text and ``metadata["invalid_reason"]``
saying what was wrong, so the validator marks it invalid and reports count it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from frontier_qa.curricula import _few_shot as few_shot
from frontier_qa.curricula import _templates as tpl
from frontier_qa.curricula._spec import ANSWER_FORMATS, CURRICULUM_SAMPLING, DOMAINS
from frontier_qa.curricula._spec import STYLES as ALL_STYLES
from frontier_qa.curricula._topics import TOPIC_FROM, TopicAssigner
from frontier_qa.errors import ConfigError, FrontierQAError
from frontier_qa.probing._curriculum_seam import History, Outcome, Proposal
from frontier_qa.store._case_ids import readable_id
from frontier_qa.target import Case, Sampling, Target, Trajectory, stable_seed

log = logging.getLogger(__name__)

STYLES: tuple[str, ...] = tuple(s for s in ALL_STYLES if s != "plain")  # plain: a trained checkpoint's card
FEW_SHOT_SHOWN = 5  # worked examples per few-shot prompt
DEFAULT_SAMPLING = CURRICULUM_SAMPLING
"""Agent0 A.1: the curriculum samples at temperature 1.0, top-p 0.99."""

_TEMPLATES = {"math": "agent0-table7", "general": "agent0-table7-general", "tools": "tool-r0",
              "open_ended": "open-ended", "workflow": "workflow"}
_KEEP = object()  # "use the domain's default case system prompt"


def derive_seed(seed: int, round_index: int, index: int) -> int:
    """A stable 31-bit seed for proposal ``index`` of round ``round_index`` (independent streams)."""
    return stable_seed(f"frontier-qa/curriculum/{seed}/{round_index}/{index}")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class ToolTaskSpec:
    """Tool-R0's task specification s = (d, c, m, n) (App. B.1), over the user's tools.

    Attributes:
        context: ``"single-turn"`` or ``"multi-turn"``.
        n_calls: gold calls asked for (n).
        menu: names of the tools shown to the generator (m = len(menu)).
    """

    context: str
    n_calls: int
    menu: tuple[str, ...]


def sample_tool_spec(rng: random.Random, tool_names: Sequence[str]) -> ToolTaskSpec:
    """Draw a specification as Tool-R0 App. B.3 does, capped by the tools the user has.

    Multi-turn with probability 0.1 (then one call); single-turn calls: 1 (0.8) or 2 (0.2);
    menu size 3–5 when n > 1, else 2–4 or 5–8 (one bucket each half of the time).
    """
    context = "multi-turn" if rng.random() < 0.1 else "single-turn"
    n_calls = 2 if context == "single-turn" and rng.random() < 0.2 else 1
    if n_calls > 1:
        size = rng.randint(3, 5)
    else:
        size = rng.randint(2, 4) if rng.random() < 0.5 else rng.randint(5, 8)
    size = max(1, min(size, len(tool_names)))
    n_calls = min(n_calls, size)
    return ToolTaskSpec(context, n_calls, tuple(rng.sample(list(tool_names), size)))


class PromptedCurriculum:
    """Proposes tasks by prompting ``model``; implements :class:`~frontier_qa.probing._curriculum_seam.Curriculum`.

    Args:
        model: the curriculum model (any target; a trained checkpoint through
            ``open_target("hf:/path")``, see :func:`from_spec`).
        domain: one of :data:`DOMAINS`.
        tools: OpenAI tool schemas: the menu for ``"tools"`` (required there), the agent's
            tools for ``"workflow"`` (shown to the generator and offered to the target).
        agent_description: what the agent under test is and does (required for ``"workflow"``).
        topics: topics to rotate through (order shuffled by ``seed``); ``None`` lets the model pick.
        sampling: the curriculum model's sampling (``seed`` is replaced per proposal).
        seed: base seed for sampling, topic order and tool specifications.
        history_examples: most examples shown per group (frontier, too easy, too hard, rejected).
        name: name in reports (default ``"prompted:<domain>@<model id>"``).
        ask_solution: reasoning domains: ask for an optional program that prints the answer.
        ask_difficulty: ask for an optional ``<difficulty_prediction>`` (→ ``predicted_pass_rate``).
        answer_format: ``"workflow"`` only: ``"text"`` (default) or ``"final_answer"``.
        case_system: system prompt of the proposed cases; default per domain (``math``/``general``:
            "reason step by step … \\boxed{}", ``open_ended``: "answer in one to three sentences",
            ``workflow`` with ``"final_answer"``: "end with 'Final answer:'"; else none).
            ``None`` means no system prompt.
        close_model: close ``model`` in :meth:`aclose` (set by :func:`from_spec`, which opened it).
        style: ``"instruct"`` (the templates above) or ``"few_shot"`` (``math``/``general`` only):
            worked ``Problem/Answer/Program`` examples and a ``Problem:`` prefill, for small models
            that cannot follow the instruct templates (:mod:`frontier_qa.curricula._few_shot`).
        examples: ``"few_shot"`` only: the worked examples to draw from (rows with ``problem``,
            ``answer``, optional ``program``); default :data:`~frontier_qa.curricula._few_shot.MATH_EXAMPLES`.
        dedupe_threshold: ``"few_shot"`` only: a problem closer than this BLEU distance to a
            shown example is rejected as a copy (``None``: keep copies).

    Raises:
        ConfigError: unknown domain, ``"tools"`` without tools, ``"workflow"`` without a
            description, a tool schema without a name, or a negative ``history_examples``.
    """

    def __init__(
        self,
        model: Target,
        *,
        domain: str = "math",
        tools: Sequence[Mapping[str, Any]] = (),
        agent_description: str | None = None,
        topics: Sequence[str] | None = None,
        sampling: Sampling = DEFAULT_SAMPLING,
        seed: int = 0,
        history_examples: int = 3,
        name: str | None = None,
        ask_solution: bool = True,
        ask_difficulty: bool = True,
        answer_format: str | None = None,
        case_system: Any = _KEEP,
        close_model: bool = False,
        style: str = "instruct",
        examples: Sequence[Mapping[str, Any]] | None = None,
        dedupe_threshold: float | None = 0.5,
        topic_from: str = "text",
        topic_embedder: Any = None,
    ) -> None:
        if domain not in DOMAINS:
            raise ConfigError(f"unknown curriculum domain {domain!r}", hint=f"use one of: {', '.join(DOMAINS)}",
                              key=("domain",))
        if style not in STYLES:
            raise ConfigError(f"unknown curriculum style {style!r}", hint=f"use one of: {', '.join(STYLES)}",
                              key=("style",))
        if style == "few_shot" and domain not in ("math", "general"):
            raise ConfigError(f"style 'few_shot' is not available for domain {domain!r}",
                              hint="use domain 'math' or 'general', or style 'instruct'", key=("style",))
        if examples is not None and style != "few_shot":
            raise ConfigError("examples are used by style 'few_shot' only", hint="set style: few_shot or drop examples",
                              key=("examples",))
        if style == "few_shot" and examples is None and domain != "math":
            raise ConfigError("style 'few_shot' for domain 'general' needs worked examples",
                              hint="pass examples=[{problem, answer, program}, ...] (built-in ones are math)",
                              key=("style",))
        self.tools = tuple(dict(t) for t in tools)
        names = [tpl.tool_name(t) for t in self.tools]
        if any(not n for n in names):
            raise ConfigError("a tool schema has no name",
                              hint='write tools as {"type": "function", "function": {"name": ..., "parameters": ...}}')
        if len(set(names)) != len(names):
            raise ConfigError(f"tool names repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
        if domain == "tools" and not self.tools:
            raise ConfigError("the 'tools' curriculum needs the target's tool schemas", hint="pass tools=[...]")
        if domain == "workflow" and not (agent_description and agent_description.strip()):
            raise ConfigError("the 'workflow' curriculum needs a description of the agent under test",
                              hint="pass agent_description='a support agent with tools search_orders and refund'")
        if answer_format not in (None, "text", "final_answer") or (answer_format and domain != "workflow"):
            raise ConfigError(f"answer_format={answer_format!r} is not available for domain {domain!r}",
                              hint="only 'workflow' takes answer_format, 'text' or 'final_answer'")
        if history_examples < 0:
            raise ConfigError(f"history_examples={history_examples} must be >= 0")
        if topic_from not in TOPIC_FROM:
            raise ConfigError(f"topic_from={topic_from!r} is not understood",
                              hint=f"use one of: {', '.join(TOPIC_FROM)}", key=("topic_from",))
        self.model = model
        self.domain = domain
        self.agent_description = agent_description
        self.sampling = sampling
        self.seed = seed
        self.history_examples = history_examples
        self.ask_solution = ask_solution
        self.ask_difficulty = ask_difficulty
        self.answer_format = (answer_format or ANSWER_FORMATS[domain]) if domain == "workflow" \
            else ANSWER_FORMATS[domain]
        self.case_system = self._default_case_system() if case_system is _KEEP else case_system
        self.style = style
        self.examples = few_shot.load_examples(examples) if examples is not None else few_shot.MATH_EXAMPLES
        self.dedupe_threshold = dedupe_threshold or None  # 0: off, as validation.dedupe_threshold reads it
        self.template = _TEMPLATES[domain] if style == "instruct" else f"few-shot-{domain}"
        self.name = name or f"prompted:{domain}@{getattr(model, 'id', type(model).__name__)}"
        self.history = History(limit=max(history_examples, 1))
        self.round = 0
        self._made = 0
        self._topics = list(topics or ())
        # the topic a task is filed under is read from its text (issue 27: the slot misfiles what a
        # small model writes); the rotation only steers what the model is asked for
        self.topic_from = topic_from
        self._assigner = TopicAssigner(self._topics, domain=domain, embedder=topic_embedder) \
            if self._topics and topic_from == "text" else None
        random.Random(seed).shuffle(self._topics)
        self._close_model = close_model
        self._shown: dict[int, list[few_shot.Example]] = {}  # few-shot: examples shown, by request seed

    def _default_case_system(self) -> str | None:
        return tpl.default_case_system(self.domain, self.answer_format)

    # ------------------------------------------------------------------------- protocol

    async def propose(self, n: int) -> list[Proposal]:
        """Ask the model for ``n`` tasks (one request each, concurrently) and parse them.

        Returns:
            ``n`` proposals, in request order; invalid outputs are flagged, not dropped.

        Raises:
            FrontierQAError: the curriculum model failed for good (budget spent, unavailable).
        """
        if n <= 0:
            return []
        round_index, first = self.round, self._made
        self.round += 1
        self._made += n
        history = self.history_text()
        requests = [self._request(round_index, i, first + i, history) for i in range(n)]
        sampling = self.sampling
        if self.style == "few_shot":  # one problem per request
            sampling = replace(sampling, stop=tuple(dict.fromkeys((*sampling.stop, *few_shot.STOP))),
                               max_tokens=min(sampling.max_tokens, 200))
        results = await asyncio.gather(
            *(self.model.sample(case, 1, replace(sampling, seed=seed), start=0)
              for case, seed, _, _ in requests),
            return_exceptions=True,
        )
        for result in results:  # every request has finished: nothing is left running
            if isinstance(result, BaseException):
                raise result
        proposals = [self._proposal(case, seed, topic, spec, got[0] if got else None)  # type: ignore[index]
                     for (case, seed, topic, spec), got in zip(requests, results, strict=True)]
        return await self._file_by_text(proposals)

    async def _file_by_text(self, proposals: list[Proposal]) -> list[Proposal]:
        """Each written task under the configured topic its text is about (:class:`TopicAssigner`)."""
        written = [i for i, p in enumerate(proposals) if p.case.prompt.strip()]
        if self._assigner is None or not written:
            return proposals
        try:
            topics = await asyncio.to_thread(self._assigner.assign_many, [proposals[i].case.prompt for i in written])
        except (FrontierQAError, OSError) as err:  # no embedding model here: say so once, keep the topics asked for
            log.warning("topics are the ones asked for, not read from the tasks (set curriculum.topic_from: asked to "
                        "say so, or install frontier-qa[embed]): %s", getattr(err, "message", err))
            self._assigner = None
            return proposals
        for i, topic in zip(written, topics, strict=True):
            case = proposals[i].case
            meta = {**case.metadata, "asked_topic": case.topic, "topic_from": "text"}
            proposals[i] = replace(proposals[i], case=replace(case, topic=topic, metadata=meta))
        return proposals

    def observe(self, outcomes: Sequence[Outcome]) -> None:
        """Remember outcomes; the next :meth:`propose` shows the recent ones to the model."""
        self.history.add(outcomes)

    async def aclose(self) -> None:
        """Close the curriculum model if this curriculum opened it (:func:`from_spec`)."""
        if self._close_model and hasattr(self.model, "aclose"):
            await self.model.aclose()

    # ------------------------------------------------------------------------- prompts

    def history_text(self) -> str:
        """The history block the next round's prompts carry (``""`` before any outcome)."""
        k = self.history_examples
        if k == 0:
            return ""
        lines: dict[str, list[str]] = {}
        for key, outcomes in self._history_groups().items():
            shown = [o for o in outcomes if o.proposal.case.prompt.strip() or key == "rejected"][-k:]
            lines[key] = [self._example(o, key) for o in shown]
        return tpl.history_block(lines)

    def _history_groups(self) -> dict[str, list[Outcome]]:
        """Recent outcomes by what they say about the target (most recent last)."""

        def recent(*classes: str, when: Any = None) -> list[Outcome]:
            return [o for c in classes for o in self.history.recent(c) if when is None or when(o)]

        def scattered(o: Outcome) -> bool:
            return o.p_hat is None or o.p_hat < 0.5

        # A stable wrong majority (failure with p̂ ≥ 0.5) is a real finding: more like it.
        return {
            "frontier": recent("frontier") + recent("failure", when=lambda o: not scattered(o)),
            "too_easy": recent("pass"),
            "too_hard": recent("suspect", "failure", when=scattered),
            "rejected": recent("invalid"),
        }

    @staticmethod
    def _example(outcome: Outcome, key: str) -> str:
        text = outcome.proposal.case.prompt.strip()
        if key == "rejected":
            reason = outcome.reason or "invalid"
            return f"{reason}: {text}" if text else reason
        return text if outcome.p_hat is None else f"{text} (p̂ = {outcome.p_hat:.2f})"

    def _topic(self, made: int) -> str | None:
        return self._topics[made % len(self._topics)] if self._topics else None

    def _request(self, round_index: int, index: int, made: int,
                 history: str) -> tuple[Case, int, str | None, ToolTaskSpec | None]:
        seed = derive_seed(self.seed, round_index, index)
        topic = self._topic(made)
        spec: ToolTaskSpec | None = None
        if self.style == "few_shot":
            return self._few_shot_request(seed, topic), seed, topic, None
        if self.domain == "tools":
            spec = sample_tool_spec(random.Random(seed), [tpl.tool_name(t) for t in self.tools])
            menu = [t for name in spec.menu for t in self.tools if tpl.tool_name(t) == name]
            system, user = tpl.tool_prompt(menu, spec.n_calls, spec.context, topic,
                                           ask_difficulty=self.ask_difficulty)
        else:
            system, user = tpl.text_prompt(self.domain, topic, ask_solution=self.ask_solution,
                                           ask_difficulty=self.ask_difficulty,
                                           agent_description=self.agent_description, tools=self.tools)
        prompt = history + user
        case = Case(id=f"curriculum-{_digest(system, prompt)}", prompt=prompt, system=system,
                    topic=topic or self.domain, answer_format="text")
        return case, seed, topic, spec

    def _few_shot_request(self, seed: int, topic: str | None) -> Case:
        shown = few_shot.choose(self.examples, self._found_examples(), FEW_SHOT_SHOWN, random.Random(seed))
        self._shown[seed] = shown
        user = few_shot.prompt(shown, topic, self.domain)
        history: tuple[dict[str, str], ...] = ()
        if getattr(self.model, "supports_prefill", False):
            history = ({"role": "assistant", "content": few_shot.PREFILL},)
        return Case(id=f"curriculum-{_digest(user)}", prompt=user, topic=topic or self.domain,
                    answer_format="text", history=history)

    def _found_examples(self) -> list[few_shot.Example]:
        """Recent frontier cases and stable wrong answers, as worked examples (most recent last)."""
        if self.history_examples == 0:
            return []
        examples = [few_shot.Example(o.proposal.case.prompt, o.proposal.case.reference or "",
                                     o.proposal.solution)
                    for o in self._history_groups()["frontier"]
                    if o.proposal.case.prompt.strip() and o.proposal.case.reference]
        return examples[-self.history_examples:]

    # ------------------------------------------------------------------------- parsing

    def _proposal(self, request: Case, seed: int, topic: str | None, spec: ToolTaskSpec | None,
                  trajectory: Trajectory | None) -> Proposal:
        metadata: dict[str, Any] = {"curriculum": self.name, "template": self.template, "seed": seed}
        source = f"{self.name}/{self.template}"
        raw = trajectory.text if trajectory is not None else None
        if trajectory is None or not trajectory.ok or raw is None:
            why = trajectory.error if trajectory is not None else "no sample returned"
            return self._invalid(f"the curriculum model returned no text: {why}", raw, topic, metadata, source)
        if self.style == "few_shot":
            parsed = few_shot.parse(raw, prefilled=request.continues_assistant)
            shown = [e.problem for e in self._shown.pop(seed, ())]
            copied = few_shot.copied(parsed.question, shown, self.dedupe_threshold)
            if copied is not None:
                return self._invalid(copied, raw, topic, metadata, source)
        else:
            parsed = tpl.PARSERS[self.domain](raw)
        if parsed.error is not None or parsed.question is None:
            return self._invalid(parsed.error or "no question", raw, topic, metadata, source)
        tools: tuple[Mapping[str, Any], ...] = ()
        if spec is not None:
            tools = self._offered_tools(parsed.tool_names, spec, metadata)
            metadata["tool_spec"] = {"context": spec.context, "n_calls": spec.n_calls, "menu": list(spec.menu)}
            metadata["ungrounded_values"] = list(tpl.ungrounded_values(parsed.question, parsed.gold_calls))
        elif self.domain == "workflow":
            tools = self.tools
            metadata["agent_description"] = self.agent_description
            if parsed.steps:
                metadata["expected_steps"] = list(parsed.steps)
        key = [self.template, parsed.question, *(tpl.tool_name(t) for t in tools)]
        case = Case(
            id=readable_id(parsed.question, *key),
            prompt=parsed.question,
            system=self.case_system,
            topic=topic or self.domain,
            answer_format=self.answer_format,
            tools=tools,
            reference=parsed.reference,
            metadata=metadata,
        )
        return Proposal(case=case, solution=parsed.solution, gold_calls=parsed.gold_calls,
                        predicted_pass_rate=parsed.predicted_pass_rate, source=source, raw=raw,
                        aliases=(f"{self.domain}-{_digest(*key)}",))  # frontier-qa 0.1's id

    def _offered_tools(self, listed: Sequence[str], spec: ToolTaskSpec,
                       metadata: dict[str, Any]) -> tuple[Mapping[str, Any], ...]:
        # The real schemas of the listed tools (never the generator's rewrite of them); names
        # it made up are recorded, and an empty or missing list means the whole menu.
        by_name = {tpl.tool_name(t): t for t in self.tools}
        unknown = [name for name in listed if name not in by_name]
        if unknown:
            metadata["unknown_tools"] = unknown
        chosen = [name for name in dict.fromkeys(listed) if name in by_name] or list(spec.menu)
        return tuple(by_name[name] for name in chosen)

    def _invalid(self, reason: str, raw: str | None, topic: str | None, metadata: dict[str, Any],
                 source: str) -> Proposal:
        # The seed makes ids unique per request (two identical bad outputs are two generations)
        # and stable across a resumed run.
        digest = _digest(self.template, str(metadata.get("seed")), raw or reason)
        case = Case(id=f"{self.domain}-invalid-{digest}", prompt="",
                    topic=topic or self.domain, answer_format=self.answer_format,
                    metadata={**metadata, "invalid_reason": reason})
        return Proposal(case=case, source=source, raw=raw)



def from_spec(spec: str, *, target_options: Mapping[str, Any] | None = None, **options: Any) -> PromptedCurriculum:
    """A prompted curriculum whose model is opened from a spec — e.g. a trained checkpoint.

    ``from_spec("hf:/runs/curriculum/checkpoint-50", domain="math")`` uses the curriculum
    trainer's output the same way as any other model.

    Args:
        spec: a target spec for :func:`frontier_qa.runtime.open_target` (``hf:/path``,
            ``litellm:openai/gpt-4o-mini``, ``openai:MODEL@URL`` …).
        target_options: keyword arguments of ``open_target`` (``limits``, ``budget``, ``cache``,
            adapter options).
        **options: keyword arguments of :class:`PromptedCurriculum` (``domain``, ``tools`` …).
    """
    from frontier_qa.runtime import open_target

    model = open_target(spec, **dict(target_options or {}))
    return PromptedCurriculum(model, close_model=True, **options)


__all__ = ["DEFAULT_SAMPLING", "DOMAINS", "STYLES", "PromptedCurriculum", "ToolTaskSpec", "derive_seed", "from_spec",
           "sample_tool_spec"]
