"""Agent0's multi-turn tool rollout (§3.3) inside GRPO training, as a TRL ``rollout_func``.

The executor answers with code: generation stops when the model closes a ```` ```python ````
block (a block before any ``\\boxed{}`` answer, :func:`~frontier_qa.adapters.tool_executor.find_code`),
the code runs in a fresh sandboxed interpreter (:class:`~frontier_qa.runtime.sandbox.Sandbox`), its
output is appended as ``"\\n```output\\n" + observation + "\\n```\\n"`` (the probe's own tool
loop, ``adapters/tool_executor.py``, and the reference's format) and the model continues from
prompt + everything so far. A row stops at EOS, at a turn that ends without code, or at
``max_completion_length`` completion tokens (model and tool together; cut there, so TRL sees a
completion without EOS and counts it as truncated). After ``max_tool_turns`` calls (Agent0: 4)
the next turn is generated without the code stop and its code is not run.

The model's tokens are kept exactly as sampled (the loss needs the log-probabilities of what
was sampled, never of a re-tokenisation of its text); only the tool's text is tokenised. Tool
tokens come back with ``env_mask`` 0 (:func:`~frontier_qa.train._rollout.mask_observations`),
which TRL turns into ``tool_mask``: attended to, but out of the loss and of ``num_items``.

Model turns come from the trainer's own (unwrapped) model with transformers ``generate``, batched
over the rows still going, or, when the trainer uses vLLM, from TRL's vLLM engine
(:mod:`frontier_qa.train._vllm_rollout`: stop at each fence, resume until a python block closes).
TRL's continuous batching option is ignored here.

Torch and TRL are imported inside the functions that need them.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from frontier_qa.adapters.tool_executor import OUTPUT_STOP, find_code, format_output
from frontier_qa.errors import ConfigError
from frontier_qa.runtime.sandbox import Sandbox, SandboxResult
from frontier_qa.train._rollout import MaskedRollout, Segment, mask_observations

# The lines of GRPOTrainer._generate this module relies on: the rollout_func call, and env_mask
# becoming tool_mask (were it dropped, tool output would silently be trained on).
_RELIED_ON = ("self.rollout_func(prompts, self)", 'extra_fields.pop("env_mask", None)')
_SANDBOX_OPTIONS = frozenset(inspect.signature(Sandbox.__init__).parameters) - {"self"}


@dataclass(frozen=True)
class ToolSettings:
    """How the executor's tool loop runs during training.

    Attributes:
        max_tool_turns: code blocks executed per rollout (Agent0: at most 4); the turn after
            the last one is generated without the code stop.
        output_max_chars: characters of a run's output shown to the model (head and tail kept).
        sandbox: keyword arguments of :class:`~frontier_qa.runtime.sandbox.Sandbox` (``timeout_s``
            in seconds, ``memory_mb``, ``network``...); empty: its defaults (10 s, 2 GiB, no network).
    """

    max_tool_turns: int = 4
    output_max_chars: int = 4000
    sandbox: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.max_tool_turns, bool) or not isinstance(self.max_tool_turns, int) or self.max_tool_turns < 0:
            raise ConfigError(f"tools: max_tool_turns={self.max_tool_turns!r} is not an int >= 0",
                              hint="Agent0 allows 4 tool calls per rollout; 0 turns the tool off")
        if isinstance(self.output_max_chars, bool) or not isinstance(self.output_max_chars, int) \
                or self.output_max_chars < 1:
            raise ConfigError(f"tools: output_max_chars={self.output_max_chars!r} is not an int >= 1",
                              hint="characters of tool output the model sees, e.g. 4000")
        unknown = sorted(set(self.sandbox) - _SANDBOX_OPTIONS)
        if unknown:
            raise ConfigError(f"tools: unknown sandbox option(s) {', '.join(unknown)}",
                              hint="known: " + ", ".join(sorted(_SANDBOX_OPTIONS)))
        object.__setattr__(self, "sandbox", dict(self.sandbox))


@dataclass(frozen=True)
class ToolTrace:
    """One finished rollout.

    Attributes:
        rollout: completion tokens and their ``tool_mask`` (1 = the model's, 0 = tool output).
        tool_calls: code blocks executed.
        tool_failures: executed blocks that failed (exception, non-zero exit, a limit hit).
        observations: what each run printed, as shown to the model.
        stop: ``"eos"`` (the model ended) or ``"length"`` (``max_completion_length`` reached).
        logprobs: with vLLM, the sampling log-probability of each completion token (``None`` on
            tool tokens, which were not sampled); ``None`` with transformers (TRL recomputes them).
    """

    rollout: MaskedRollout
    tool_calls: int
    tool_failures: int
    observations: tuple[str, ...]
    stop: str
    logprobs: tuple[float | None, ...] | None = None


def check_trl_rollout() -> None:
    """Refuse a TRL whose ``_generate`` no longer calls ``rollout_func`` or reads ``env_mask``.

    Raises:
        ConfigError: a relied-on line is gone, so tool output could silently enter the loss.
    """
    from trl import GRPOTrainer

    source = inspect.getsource(inspect.unwrap(GRPOTrainer._generate))
    missing = [line for line in _RELIED_ON if line not in source]
    if missing:
        raise ConfigError("executor tool rollouts rely on GRPOTrainer._generate containing "
                          + "; ".join(f"`{line}`" for line in missing),
                          hint="install trl==1.16.0, or port frontier_qa/train/tool_rollout.py")


class _TurnStop:
    """A transformers stopping criterion that records, per row, where and why its turn ended.

    ``limits[r]`` new tokens end row ``r`` ("length"); an EOS token ends it ("eos"); a closed
    python block before any ``\\boxed{`` ends it ("code") where ``code[r]`` is set.
    """

    def __init__(self, tokenizer: Any, start: int, limits: Sequence[int], code: Sequence[bool],
                 eos_ids: Sequence[int]) -> None:
        self.tokenizer, self.start = tokenizer, start
        self.limits, self.code, self.eos_ids = list(limits), list(code), set(eos_ids)
        self.ends: list[int | None] = [None] * len(limits)
        self.reasons: list[str | None] = [None] * len(limits)

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        n = input_ids.shape[1] - self.start
        done = []
        for r in range(input_ids.shape[0]):
            if self.ends[r] is None:
                reason = None
                last = int(input_ids[r, -1])
                if last in self.eos_ids:
                    reason = "eos"
                elif self.code[r] and "`" in self.tokenizer.decode([last]) and find_code(
                        self.tokenizer.decode(input_ids[r, self.start:].tolist())) is not None:
                    reason = "code"  # only a token with a backtick can close a block: decode the turn then
                elif n >= self.limits[r]:
                    reason = "length"
                if reason is not None:
                    self.ends[r], self.reasons[r] = n, reason
            done.append(self.ends[r] is not None)
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


@dataclass(frozen=True)
class Turn:
    """One model turn of one row.

    Attributes:
        token_ids: the tokens sampled in this turn, in order.
        reason: ``"code"`` (it ended right after a closed python block), ``"eos"`` or ``"length"``.
        logprobs: the sampling log-probability of each token (vLLM), ``None`` when unknown.
    """

    token_ids: tuple[int, ...]
    reason: str
    logprobs: tuple[float | None, ...] | None = None


class Turns(Protocol):
    """Generates one model turn for each running row.

    ``turns(contexts, limits, code)``: ``contexts[i]`` is row i's prompt and completion so far
    (token ids), ``limits[i]`` the most tokens it may add, ``code[i]`` whether its turn ends at
    a closed python block (it has tool calls left); one :class:`Turn` per row, in order.
    """

    def __call__(self, contexts: Sequence[Sequence[int]], limits: Sequence[int],
                 code: Sequence[bool]) -> list[Turn]: ...


class _HFTurns:
    """Model turns with transformers ``generate``: all running rows in one batch, left-padded."""

    def __init__(self, model: Any, tokenizer: Any, generation_config: Any, eos: Sequence[int]) -> None:
        self.model, self.tokenizer, self.config, self.eos = model, tokenizer, generation_config, list(eos)
        pad = generation_config.pad_token_id
        self.pad = pad if pad is not None else tokenizer.pad_token_id

    def __call__(self, contexts: Sequence[Sequence[int]], limits: Sequence[int], code: Sequence[bool]) -> list[Turn]:
        import torch
        from transformers import StoppingCriteriaList

        device = next(self.model.parameters()).device
        width = max(map(len, contexts))
        input_ids = torch.tensor([[self.pad] * (width - len(c)) + list(c) for c in contexts], device=device)
        attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=device)
        stop = _TurnStop(self.tokenizer, width, limits, code, self.eos)
        config = copy.deepcopy(self.config)
        config.max_new_tokens = max(limits)  # the turn's budget: what the longest row has left
        with torch.no_grad():
            out = self.model.generate(input_ids=input_ids, attention_mask=attention, generation_config=config,
                                      stopping_criteria=StoppingCriteriaList([stop]))
        turns = []
        for j in range(len(contexts)):
            stopped_at = stop.ends[j]
            end = stopped_at if stopped_at is not None else out.shape[1] - width
            turns.append(Turn(tuple(out[j, width:width + end].tolist()), stop.reasons[j] or "length"))
        return turns


class ToolRollout:
    """TRL ``rollout_func`` running Agent0's multi-turn tool rollout (see the module docstring).

    ``trainer`` calls it as ``rollout(prompts, trainer)`` with the prompts of its process,
    already repeated ``num_generations`` times by TRL's sampler; it returns one completion
    per prompt, as a dict with ``prompt_ids``, ``completion_ids``, ``logprobs`` (``None``:
    TRL recomputes them), ``env_mask`` (TRL's ``tool_mask``) and the per-sample columns
    ``tool_calls`` and ``tool_failures`` (ints; reward functions receive them as keyword
    arguments). It logs ``tools/call_frequency`` (calls per rollout), ``tools/failure_frequency``
    (failed / executed) and ``tools/limit_ratio`` (share of rollouts that used every allowed
    call) into the trainer's metrics.

    Args:
        settings: tool-loop settings; Agent0's by default.
        sandbox: a ready :class:`~frontier_qa.runtime.sandbox.Sandbox` instead of ``settings.sandbox``.
    """

    def __init__(self, settings: ToolSettings | None = None, *, sandbox: Sandbox | None = None) -> None:
        self.settings = settings or ToolSettings()
        self.sandbox = sandbox if sandbox is not None else Sandbox(**self.settings.sandbox)
        self.last: list[ToolTrace] = []  # the latest batch, for inspection and logging
        self._checked = False

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        if not self._checked:
            check_trl_rollout()
            self._checked = True
        import torch

        prompt_ids = [list(ids) for ids in trainer._tokenize_prompts(prompts)[0]]  # exactly as TRL's own path
        if getattr(trainer, "use_vllm", False):  # TRL has synced the policy's weights into its engine
            from frontier_qa.train._vllm_rollout import VLLMTurns

            traces = self.roll(trainer.processing_class, prompt_ids, VLLMTurns.for_trainer(trainer),
                               trainer.max_completion_length)
        else:
            from trl.models import unwrap_model_for_generation

            args = trainer.args
            with (
                unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                            gather_deepspeed3_params=args.ds3_gather_for_generation,
                                            generation_kwargs=trainer.generation_kwargs,
                                            gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs) as model,
                trainer._dist.summon_full_params(trainer.model_wrapped, recurse=False),
            ):
                traces = self.generate(model, trainer.processing_class, prompt_ids,
                                       generation_config=trainer.generation_config,
                                       max_completion_length=trainer.max_completion_length,
                                       eos_token_ids=trainer.eos_token_ids)
        self.last = traces
        self._log(trainer, traces, torch)
        vllm = all(t.logprobs is not None for t in traces) and bool(traces)
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": [list(t.rollout.completion_ids) for t in traces],
            # vLLM's sampling log-probs feed TRL's importance-sampling correction; tool tokens have none
            "logprobs": [list(t.logprobs or ()) for t in traces] if vllm else None,
            "env_mask": [list(t.rollout.tool_mask) for t in traces],
            "tool_calls": [t.tool_calls for t in traces],
            "tool_failures": [t.tool_failures for t in traces],
        }

    def generate(self, model: Any, tokenizer: Any, prompt_ids: Sequence[Sequence[int]], *,
                 generation_config: Any, max_completion_length: int,
                 eos_token_ids: Sequence[int] | None = None) -> list[ToolTrace]:
        """Roll out every prompt with the tool loop; one :class:`ToolTrace` per prompt, in order.

        Args:
            model: a transformers causal LM (unwrapped).
            tokenizer: its tokenizer (decodes turns, encodes tool output).
            prompt_ids: token ids of each prompt.
            generation_config: sampling settings (temperature, top_p, pad, eos...); each turn
                overrides only ``max_new_tokens``.
            max_completion_length: completion tokens per rollout, model and tool together.
            eos_token_ids: tokens that end a rollout (default: the config's ``eos_token_id``).
        """
        if max_completion_length < 1:
            raise ConfigError(f"max_completion_length={max_completion_length} must be >= 1", hint="e.g. 1024")
        eos = eos_token_ids if eos_token_ids is not None else generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        return self.roll(tokenizer, prompt_ids, _HFTurns(model, tokenizer, generation_config, eos),
                         max_completion_length)

    def roll(self, tokenizer: Any, prompt_ids: Sequence[Sequence[int]], turns: Turns,
             max_completion_length: int) -> list[ToolTrace]:
        """The tool loop over any turn generator (transformers or vLLM), one trace per prompt.

        Args:
            tokenizer: decodes the model's turns, encodes tool output.
            prompt_ids: token ids of each prompt.
            turns: generates one model turn for each running row (see :class:`Turns`).
            max_completion_length: completion tokens per rollout, model and tool together.
        """
        if max_completion_length < 1:
            raise ConfigError(f"max_completion_length={max_completion_length} must be >= 1", hint="e.g. 1024")
        segments: list[list[Segment]] = [[] for _ in prompt_ids]
        logprobs: list[list[float | None]] = [[] for _ in prompt_ids]
        sampled_logprobs = True
        length = [0] * len(prompt_ids)  # completion tokens so far
        calls, failures = [0] * len(prompt_ids), [0] * len(prompt_ids)
        observations: list[list[str]] = [[] for _ in prompt_ids]
        stops: list[str | None] = [None] * len(prompt_ids)
        running = list(range(len(prompt_ids)))
        while running:
            contexts = [list(prompt_ids[r]) + [t for s in segments[r] for t in s.token_ids] for r in running]
            limits = [max_completion_length - length[r] for r in running]
            generated = turns(contexts, limits, [calls[r] < self.settings.max_tool_turns for r in running])
            codes: list[tuple[int, str]] = []
            for r, turn in zip(running, generated, strict=True):
                new = list(turn.token_ids)  # the sampled tokens, untouched
                segments[r].append(Segment("model", tuple(new)))
                if turn.logprobs is None:
                    sampled_logprobs = False
                else:
                    logprobs[r].extend(turn.logprobs)
                length[r] += len(new)
                if turn.reason == "code" and length[r] < max_completion_length:
                    block = find_code(tokenizer.decode(new))
                    codes.append((r, block.group(1)))  # type: ignore[union-attr]  # the turn ended at it
                else:  # EOS, the length limit, or a block closed on the very last token (not run: no room)
                    stops[r] = "eos" if turn.reason == "eos" else "length"
            results = self._run([code for _, code in codes])
            for (r, _), result in zip(codes, results, strict=True):
                observation = format_output(result, self.settings.output_max_chars)
                calls[r] += 1
                failures[r] += not result.ok
                observations[r].append(observation)
                tool = tokenizer(f"\n{OUTPUT_STOP}\n{observation}\n```\n", add_special_tokens=False)["input_ids"]
                room = max_completion_length - length[r]
                segments[r].append(Segment("tool", tuple(tool[:room])))
                logprobs[r].extend([None] * min(room, len(tool)))
                length[r] += min(room, len(tool))
                if length[r] >= max_completion_length:
                    stops[r] = "length"
            running = [r for r in running if stops[r] is None]
        limit = self.settings.max_tool_turns
        return [ToolTrace(mask_observations(segments[r], max_tool_turns=limit), calls[r], failures[r],
                          tuple(observations[r]), stops[r] or "length",
                          tuple(logprobs[r]) if sampled_logprobs else None) for r in range(len(prompt_ids))]

    def _run(self, codes: Sequence[str]) -> list[SandboxResult]:
        """Each block in a fresh sandboxed interpreter, concurrently (up to the sandbox's limit)."""
        if not codes:
            return []
        from frontier_qa.runtime import run_sync

        async def run_all() -> list[SandboxResult]:
            return list(await asyncio.gather(*(self.sandbox.arun(code) for code in codes)))

        return run_sync(run_all())

    def _log(self, trainer: Any, traces: Sequence[ToolTrace], torch: Any) -> None:
        mode = "train" if trainer.model.training else "eval"
        device = trainer.accelerator.device
        totals = torch.tensor([len(traces), sum(t.tool_calls for t in traces), sum(t.tool_failures for t in traces),
                               sum(t.tool_calls >= self.settings.max_tool_turns > 0 for t in traces)],
                              dtype=torch.long, device=device)
        rollouts, calls, failed, at_limit = trainer.accelerator.gather(totals.unsqueeze(0)).sum(0).tolist()
        metrics = trainer._metrics[mode]
        metrics["tools/call_frequency"].append(calls / rollouts if rollouts else 0.0)
        metrics["tools/failure_frequency"].append(failed / calls if calls else 0.0)
        metrics["tools/limit_ratio"].append(at_limit / rollouts if rollouts else 0.0)


__all__ = ["ToolRollout", "ToolSettings", "ToolTrace", "check_trl_rollout"]
