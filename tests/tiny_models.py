"""A tiny randomly initialised chat model for fast tests (adapters, trainers).

``build_tiny_model(folder)`` writes a ≈ 100k-parameter ``Qwen2ForCausalLM`` and a byte-level
BPE tokenizer trained here (vocab 512) with a ChatML chat template, left padding, pad
``<|endoftext|>`` and eos ``<|im_end|>`` (ENVIRONMENT.md "TRL 1.16 GRPO on CPU"). Nothing is
downloaded; building takes well under a second. Its output is noise, but deterministic noise:
the same seed gives the same weights.

Use it from a test module::

    from tests.tiny_models import build_tiny_model

    @pytest.fixture(scope="module")
    def tiny_model(tmp_path_factory):
        return build_tiny_model(tmp_path_factory.mktemp("tiny"))
"""

from __future__ import annotations

from pathlib import Path

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

# Qwen2's ChatML template, minus tool rendering: what trl and transformers expect of a chat model.
# It writes message content verbatim, which continue_final_message relies on.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

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
) -> Path:
    """Save a tiny random ``Qwen2ForCausalLM`` and its tokenizer into ``folder``.

    Args:
        folder: where to write (created if missing).
        seed: torch seed for the weights.
        vocab_size: BPE vocabulary size, special tokens included.
        hidden_size: model width (4 heads of ``hidden_size / 4``, 2 KV heads).
        num_layers: decoder layers.

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
        num_attention_heads=4,
        num_key_value_heads=2,
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


__all__ = ["CHATML_TEMPLATE", "SPECIAL_TOKENS", "build_tiny_model", "build_tiny_tokenizer"]
