"""The scoring core: from answer texts to p̂, bands and rewards; pure values, no I/O.

Nothing here calls a target, and nothing imports above the base (``frontier_qa.errors``,
``frontier_qa.target``): the probe engine, the trainers and ``frontier-qa score`` all score
with these functions.

=================  =========================================================================
``answers``        final answers out of texts (``\\boxed{}``, "Final answer:", JSON fields)
``_equivalence``   string → numeric → symbolic equivalence (``_symbolic``: the sympy worker)
``consistency``    majority vote with equivalent answers merged: p̂, pseudo-label, entropy
``_case_scoring``  ``score_case``: one case's samples → answers and p̂, for the probe, the
                   curriculum reward and the co-evolution pool alike
``_tool_calls``    tool calls as answers: relaxed reading, canonical JSON (Tool-R0)
``_semantic``      open-ended p̂ from embedding clusters (``embedders``, ``contradiction``)
``bands``          the frontier bands (Agent0, Tool-R0) on p̂
``rewards``        the curriculum reward terms and presets (Agent0 Eq. 2–5)
``_repetition``    the repetition penalty over a batch of tasks (Agent0 Eq. 4)
``_difficulty``    predicted pass rates and their calibration
=================  =========================================================================
"""
