"""Multi-turn tool rollouts as training data: which completion tokens the loss may see.

An executor rollout with tools (Agent0 §3.3) alternates the model's own turns with the
sandbox's output: the model writes a ```` ```python ```` block, the code runs, its result is
appended as ```` ```output ```` … ```` ``` ````, the model continues, up to 4 tool turns,
and ends with ``\\boxed{}``. The sandbox's tokens were never sampled from the policy, so
their log-probabilities carry no policy gradient signal; training on them would teach the
model to predict tool output (docs/method.md §5: tool output is not trained on).

The tool tokens must still be *seen*: later model tokens are conditioned on them. So they stay
in ``completion_mask`` (TRL's attention mask for the completion) and are removed from the loss
by a second mask, TRL's ``tool_mask`` (1 = the model's token, 0 = tool output; TRL's loss uses
``completion_mask * tool_mask``, and counts only those tokens in ``num_items_in_batch``). Zeroing
tool tokens in ``completion_mask`` instead would hide them from attention and make the model's
later tokens' log-probabilities wrong.

:func:`mask_observations` turns a rollout given as segments into ``completion_ids`` and that
``tool_mask``; :func:`pad_rollouts` right-pads a batch the way TRL lays out completions.
Pure Python; nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from frontier_qa.errors import ConfigError

SegmentKind = Literal["model", "tool"]
KINDS: tuple[str, ...] = ("model", "tool")


@dataclass(frozen=True)
class Segment:
    """A contiguous run of completion tokens from one source.

    Attributes:
        kind: ``"model"`` (sampled from the policy: trained on) or ``"tool"`` (the sandbox's
            output, with its ```` ```output ```` fence: masked out of the loss).
        token_ids: the tokens, in order.
    """

    kind: SegmentKind
    token_ids: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"unknown rollout segment kind {self.kind!r}", hint="use 'model' or 'tool'")
        object.__setattr__(self, "token_ids", tuple(self.token_ids))
        for t in self.token_ids:
            if isinstance(t, bool) or not isinstance(t, int) or t < 0:
                raise ConfigError(f"rollout token id {t!r} is not a non-negative int", hint="pass tokenizer ids")


@dataclass(frozen=True)
class MaskedRollout:
    """One rollout ready for the loss.

    Attributes:
        completion_ids: every completion token, model and tool, in order (all attended to).
        tool_mask: 1 where the token is the model's (in the loss), 0 where it is tool output
            (TRL's ``tool_mask`` / ``env_mask``).
        tool_turns: how many tool-output segments the rollout holds (Agent0's tool calls).
    """

    completion_ids: tuple[int, ...]
    tool_mask: tuple[int, ...]
    tool_turns: int

    @property
    def trained_tokens(self) -> int:
        """Tokens the loss sees (the model's own)."""
        return sum(self.tool_mask)


def mask_observations(segments: Iterable[Segment | tuple[str, Sequence[int]]],
                      *, max_tool_turns: int | None = None) -> MaskedRollout:
    """Join a rollout's segments into ``completion_ids`` and a ``tool_mask`` that drops tool output.

    Args:
        segments: the rollout in order, as :class:`Segment` or ``(kind, token_ids)`` pairs.
            Adjacent segments of the same kind are allowed (a model turn split in two).
        max_tool_turns: refuse a rollout with more tool segments than this (Agent0: 4).

    Returns:
        The joined rollout; ``tool_mask`` has one entry per token.

    Raises:
        ConfigError: an unknown kind, a bad token id, or too many tool turns.

    Examples:
        >>> r = mask_observations([("model", [5, 6]), ("tool", [7]), ("model", [8])])
        >>> r.completion_ids, r.tool_mask, r.tool_turns
        ((5, 6, 7, 8), (1, 1, 0, 1), 1)
    """
    ids: list[int] = []
    mask: list[int] = []
    tool_turns = 0
    for seg in segments:
        seg = seg if isinstance(seg, Segment) else Segment(seg[0], tuple(seg[1]))  # type: ignore[arg-type]
        is_model = seg.kind == "model"
        tool_turns += not is_model
        ids.extend(seg.token_ids)
        mask.extend([int(is_model)] * len(seg.token_ids))
    if max_tool_turns is not None and tool_turns > max_tool_turns:
        raise ConfigError(f"a rollout has {tool_turns} tool turns, more than max_tool_turns={max_tool_turns}",
                          hint="stop generating once the tool-turn limit is reached")
    return MaskedRollout(tuple(ids), tuple(mask), tool_turns)


def pad_rollouts(
    rollouts: Sequence[MaskedRollout], pad_token_id: int
) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    """Right-pad rollouts to one length, as TRL lays out completions.

    Args:
        rollouts: the batch.
        pad_token_id: the tokenizer's pad id.

    Returns:
        ``(completion_ids, completion_mask, tool_mask)``, each B lists of the longest rollout's
        length: ``completion_mask`` is 1 on every real token (model and tool: attended to) and
        0 on padding; ``tool_mask`` is the rollouts' own, padded with 1 as TRL pads it (padding
        is already out of the loss through ``completion_mask``). The loss sees
        ``completion_mask * tool_mask``.
    """
    width = max((len(r.completion_ids) for r in rollouts), default=0)
    ids = [list(r.completion_ids) + [pad_token_id] * (width - len(r.completion_ids)) for r in rollouts]
    attention = [[1] * len(r.completion_ids) + [0] * (width - len(r.completion_ids)) for r in rollouts]
    tool_mask = [list(r.tool_mask) + [1] * (width - len(r.tool_mask)) for r in rollouts]
    return ids, attention, tool_mask
