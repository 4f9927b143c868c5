"""A tiny randomly initialised chat model for fast tests (adapters, trainers).

``build_tiny_model(folder)`` writes a ≈ 100k-parameter ``Qwen2ForCausalLM`` and a byte-level
BPE tokenizer trained here (vocab 512) with a ChatML chat template, left padding, pad
``<|endoftext|>`` and eos ``<|im_end|>`` (docs/environment.md, "TRL GRPO on CPU"). Nothing is
downloaded; building takes well under a second. Its output is noise, but deterministic noise:
the same seed gives the same weights.

``build_tool_user_model(folder)`` is the same model imprinted by a few hundred SFT steps with
Agent0's tool protocol (Agent0 §3.3): asked "What is a + b?" for a few memorised pairs it writes
a ```` ```python ```` block that prints ``a + b``, and after the ```` ```output ```` block it
writes ``The answer is \\boxed{a + b}.``; asked to "Print a + b three times." it keeps calling
the tool. Tool-rollout and executor-training tests use it.

Use it from a test module::

    from tests.tiny_models import build_tiny_model

    @pytest.fixture(scope="module")
    def tiny_model(tmp_path_factory):
        return build_tiny_model(tmp_path_factory.mktemp("tiny"))
"""

from __future__ import annotations

from pathlib import Path

# Qwen's special tokens and ChatML template, minus tool rendering: what trl and transformers expect
# of a chat model. It writes message content verbatim, which continue_final_message relies on. They
# live with the GPU validation's random models, which import nothing of the repository's.
from benchmarks.gpu.random_models import CHATML_TEMPLATE, SPECIAL_TOKENS

# Enough text for BPE to learn merges for common words, digits and the chat markup.
_CORPUS = [
    "What is 2+3? The answer is \\boxed{5}.",
    "Solve for x: 3x + 4 = 19. Subtract 4, divide by 3, so x = 5.",
    "The quick brown fox jumps over the lazy dog.",
    "Please reason step by step, and put your final answer within \\boxed{}.",
    "```python\nprint(sum(range(10)))\n```\n```output\n45\n```",
    "system user assistant tool question answer final",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 100 1000",
    "Agent0 co-evolves a curriculum agent and an executor agent from zero data.",
] * 4


def build_tiny_tokenizer(vocab_size: int = 512):  # -> transformers.PreTrainedTokenizerFast
    """A byte-level BPE tokenizer with ChatML special tokens and template, left padding."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodable
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        chat_template=CHATML_TEMPLATE,
    )


def build_tiny_model(
    folder: str | Path,
    *,
    seed: int = 0,
    vocab_size: int = 512,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
) -> Path:
    """Save a tiny random ``Qwen2ForCausalLM`` and its tokenizer into ``folder``.

    Args:
        folder: where to write (created if missing).
        seed: torch seed for the weights.
        vocab_size: BPE vocabulary size, special tokens included.
        hidden_size: model width (4 heads of ``hidden_size / 4``, 2 KV heads).
        num_layers: decoder layers.
        num_heads: attention heads (half as many KV heads); 2 gives a head size of 32, the
            smallest vLLM's CPU attention accepts (4 heads of 16 run on transformers only).

    Returns:
        ``folder`` as a :class:`Path`, loadable with ``from_pretrained(folder, local_files_only=True)``.
    """
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_tokenizer(vocab_size)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=max(1, num_heads // 2),
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# --- a tiny model that uses the python tool -------------------------------------------------------

TOOL_PAIRS: tuple[tuple[int, int], ...] = ((17, 25), (3, 4), (12, 30), (8, 9), (21, 21), (5, 14))
"""The (a, b) pairs :func:`build_tool_user_model` memorises ("What is a + b?")."""

REPEAT_PAIRS: tuple[tuple[int, int], ...] = ((17, 25), (3, 4))
"""Pairs it also memorises as "Print a + b three times.": three tool calls before the answer."""


def tool_question(a: int, b: int) -> str:
    """The question :func:`build_tool_user_model` answers with one tool call."""
    return f"What is {a} + {b}?"


def repeat_question(a: int, b: int) -> str:
    """The question it answers with three tool calls (one more than a limit of 1 or 2 allows)."""
    return f"Print {a} + {b} three times."


def tool_code_block(a: int, b: int) -> str:
    """The python block the model writes for ``a + b``."""
    return f"```python\nprint({a} + {b})\n```"


def output_block(observation: str) -> str:
    """The sandbox output block, in the reference's format (``adapters/tool_executor.py``)."""
    return f"\n```output\n{observation}\n```\n"


def answer_text(a: int, b: int) -> str:
    """The final answer after the output block."""
    return f"The answer is \\boxed{{{a + b}}}."


def _tool_examples(tokenizer, system: str | None = None, pairs: tuple[tuple[int, int], ...] = TOOL_PAIRS,
                   repeat_pairs: tuple[tuple[int, int], ...] = REPEAT_PAIRS) -> list[tuple[list[int], list[int]]]:
    """(token ids, loss mask) per training sequence: loss on the model's turns only."""
    def ids(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    examples = []
    calls = [(q, a, b, 1) for a, b in pairs for q in [tool_question(a, b)]]
    calls += [(repeat_question(a, b), a, b, 3) for a, b in repeat_pairs]
    for question, a, b, n in calls:
        head = [{"role": "system", "content": system}] if system else []
        prompt = tokenizer.apply_chat_template([*head, {"role": "user", "content": question}], tokenize=False,
                                               add_generation_prompt=True)
        segments = [(ids(prompt), 0)]
        for _ in range(n):
            segments += [(ids(tool_code_block(a, b)), 1), (ids(output_block(str(a + b))), 0)]
        segments.append((ids(answer_text(a, b)) + [tokenizer.eos_token_id], 1))
        tokens = [t for seg, _ in segments for t in seg]
        mask = [m for seg, m in segments for _ in seg]
        examples.append((tokens, mask))
    return examples


def build_tool_user_model(folder: str | Path, *, seed: int = 0, steps: int = 150,
                          learning_rate: float = 3e-3, system: str | None = None, num_heads: int = 4,
                          pairs: tuple[tuple[int, int], ...] = TOOL_PAIRS,
                          repeat_pairs: tuple[tuple[int, int], ...] = REPEAT_PAIRS) -> Path:
    """Save the tiny model of :func:`build_tiny_model`, taught to call a python tool, into ``folder``.

    Full-batch SFT (plain torch Adam, CPU, one thread so the result is the same on every
    machine) on the sequences of :data:`TOOL_PAIRS` and :data:`REPEAT_PAIRS`; the loss covers
    the model's turns (code, answer, eos), not the prompt or the tool output, as in a real
    tool rollout. Deterministic for a given ``seed``; ≈ 3.5 s on 2 CPU cores (≈ 2.5 s of SFT).

    Measured with seed 0, 16 samples per prompt at temperature 1 through
    :class:`~frontier_qa.train.tool_rollout.ToolRollout` (max 64 tokens): over the six
    :data:`TOOL_PAIRS` it called the tool in 15-16 of 16 samples, its code printed a + b in
    12-15 and it boxed a + b in 12-14 (for "What is 17 + 25?": 15 / 13 / 12); the rest vary
    (``print(8 +4)``, a cut-off answer), which gives GRPO reward differences. Greedy, every
    pair is answered exactly: code, output, ``The answer is \\boxed{a + b}.``, EOS. For
    :func:`repeat_question` it calls the tool again after each output (16 of 16).

    Args:
        folder: where to write (created if missing).
        seed: torch seed for the initial weights and the training.
        steps: Adam steps over the whole set.
        learning_rate: Adam learning rate.
        system: a system message the prompts carry (the co-evolution executor's); ``None``: none.
        num_heads: attention heads (2: a model vLLM's CPU attention can serve).
        pairs: the (a, b) pairs it is taught to add with the tool (default :data:`TOOL_PAIRS`).
        repeat_pairs: the pairs it is taught to print three times (default :data:`REPEAT_PAIRS`).

    Returns:
        ``folder`` as a :class:`Path`, loadable with ``from_pretrained(folder, local_files_only=True)``.
    """
    from transformers import AutoTokenizer

    folder = build_tiny_model(folder, seed=seed, num_heads=num_heads)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return _imprint(folder, _tool_examples(tokenizer, system, pairs, repeat_pairs), seed=seed, steps=steps,
                    learning_rate=learning_rate)


def build_question_writer_model(folder: str | Path, prompt: str, questions: list[str], *, seed: int = 0,
                                steps: int = 150, learning_rate: float = 3e-3, num_heads: int = 4) -> Path:
    """The tiny model, taught to answer ``prompt`` with one of ``questions`` (a curriculum that writes tasks).

    Sampled at temperature 1 it writes the memorised questions in varying proportions (and now and
    then a mix of two), which is what a co-evolution test needs of a curriculum: real tasks.
    """
    from transformers import AutoTokenizer

    folder = build_tiny_model(folder, seed=seed, num_heads=num_heads)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    head = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                         add_generation_prompt=True)
    head_ids = tokenizer(head, add_special_tokens=False)["input_ids"]
    examples = []
    for question in questions:
        body = tokenizer(question, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        examples.append((head_ids + body, [0] * len(head_ids) + [1] * len(body)))
    return _imprint(folder, examples, seed=seed, steps=steps, learning_rate=learning_rate)


def build_answerer_model(folder: str | Path, answers: list[tuple[str, str, int]], *, seed: int = 0,
                         steps: int = 150, learning_rate: float = 3e-3, num_heads: int = 4,
                         batch_size: int | None = None) -> Path:
    """The tiny model, taught to answer each question with a mix of answers (no tool calls).

    ``answers`` holds (question, answer text, weight) triples; a question listed with two answers
    of weights 2 and 1 is answered the first way about two times in three at temperature 1, as
    far as the SFT fits the mix. Learning evidence uses it to plant an executor that is right
    most of the time and otherwise falls into one shared wrong mode.
    """
    from transformers import AutoTokenizer

    folder = build_tiny_model(folder, seed=seed, num_heads=num_heads)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    examples = []
    for question, answer, weight in answers:
        head = tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                             add_generation_prompt=True)
        head_ids = tokenizer(head, add_special_tokens=False)["input_ids"]
        body = tokenizer(answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        examples += [(head_ids + body, [0] * len(head_ids) + [1] * len(body))] * weight
    return _imprint(folder, examples, seed=seed, steps=steps, learning_rate=learning_rate, batch_size=batch_size)


def _imprint(folder: Path, examples: list[tuple[list[int], list[int]]], *, seed: int, steps: int,
             learning_rate: float, batch_size: int | None = None) -> Path:
    """SFT of the saved tiny model on (token ids, loss mask) sequences; saved in place.

    Full batch by default; with ``batch_size``, each step takes a random batch of that many
    sequences (drawn with the seeded generator, so still deterministic).
    """
    import torch
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = Qwen2ForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32)
    width = max(len(tokens) for tokens, _ in examples)
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([t + [pad] * (width - len(t)) for t, _ in examples])  # (N, W), right padded
    attention = torch.tensor([[1] * len(t) + [0] * (width - len(t)) for t, _ in examples])
    labels = torch.tensor([[tok if m else -100 for tok, m in zip(t, mask, strict=True)] + [-100] * (width - len(t))
                           for t, mask in examples])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same float sums, so the same weights, everywhere
    try:
        torch.manual_seed(seed)
        optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
        model.train()
        for _ in range(steps):
            rows = slice(None) if batch_size is None else torch.randperm(len(examples))[:batch_size]
            loss = model(input_ids=input_ids[rows], attention_mask=attention[rows], labels=labels[rows]).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(folder)
    return folder


# --- a tiny model that writes sentences of words ------------------------------------------------------

WORDS = ("apple banana cherry river mountain city garden window letter number table chair music paper "
         "stone cloud green blue red yellow seven three twelve ninety count add find how many what when "
         "where which train boat house road light dark quick slow happy small large round square angle "
         "price total sum half double zebra").split()

def build_word_model(folder: Path, seed: int = 0) -> Path:
    """A ≈ 60k-parameter random causal LM whose tokens are the words of :data:`WORDS`.

    Every task it writes is a sentence of words, which the BLEU distance of the repetition
    penalty reads (byte-level noise with no spaces would look unique to it). A Granite config is
    used only because transformers loads a generic tokenizer for that model type.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GenerationConfig, GraniteConfig, GraniteForCausalLM, PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "[UNK]"]
    backend = Tokenizer(models.WordLevel({t: i for i, t in enumerate(specials + WORDS)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        unk_token="[UNK]", padding_side="left", chat_template=CHATML_TEMPLATE,
                                        additional_special_tokens=["<|im_start|>"])
    config = GraniteConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                           tie_word_embeddings=True, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
                           pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = GraniteForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


__all__ = ["CHATML_TEMPLATE", "REPEAT_PAIRS", "SPECIAL_TOKENS", "TOOL_PAIRS", "WORDS", "answer_text",
           "build_answerer_model", "build_question_writer_model", "build_word_model",
           "build_tiny_model", "build_tiny_tokenizer", "build_tool_user_model", "output_block", "repeat_question",
           "tool_code_block", "tool_question"]
