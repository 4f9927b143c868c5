"""Randomly initialised models of real sizes, built on the machine that runs them: no hub, no files carried.

A GPU machine lent to this project reaches no model hub, so the GPU validation
(``benchmarks/gpu/run.sh``) builds its models here from configs:

* **architecture**: Qwen3-0.6B and Qwen3-1.7B as published (hidden size, 28 layers, 16 query and
  8 KV heads of 128, SwiGLU width, tied embeddings, vocabulary 151,936), bf16 on a GPU;
* **tokenizer**: a byte-level BPE with exactly as many tokens as the model has rows (151,936),
  so the embedding, the LM head and every logits tensor are the real size and memory figures are
  not understated. Its merges are made, not learned: the 256 bytes, then pairs and triples of
  printable characters, so every token id decodes to printable text. ChatML chat template,
  ``<|im_end|>`` as EOS, ``<|endoftext|>`` as pad, left padding: what the trainers expect.

Random weights measure speed and memory, never learning: the model writes printable noise until
``max_completion_length`` (EOS is one token in 151,936, so it almost never stops early), which
makes every step generate its full length: the worst case of a real run's step time.

``tiny`` is the same builder at a size that runs in seconds on CPU (the dry run in the tests).

Usage::

    python benchmarks/gpu/random_models.py qwen3-0.6b /tmp/models/qwen3-0.6b
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Qwen's names; they take the last ids of the vocabulary."""

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
"""Qwen's ChatML template without tool rendering; content is written verbatim."""


@dataclass(frozen=True)
class Size:
    """A Qwen3 decoder's shape.

    Attributes:
        hidden: model width.
        layers: decoder layers.
        heads: query heads.
        kv_heads: key/value heads (grouped-query attention).
        head_dim: width of one head.
        intermediate: SwiGLU inner width.
        vocab: vocabulary size (embedding rows, LM head rows, tokenizer tokens).
    """

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int = 151_936


SIZES: dict[str, Size] = {
    # Qwen3-0.6B and Qwen3-1.7B's published config.json (tie_word_embeddings: true in both)
    "qwen3-0.6b": Size(hidden=1024, layers=28, heads=16, kv_heads=8, head_dim=128, intermediate=3072),
    "qwen3-1.7b": Size(hidden=2048, layers=28, heads=16, kv_heads=8, head_dim=128, intermediate=6144),
    # the same code at CPU size: the dry run (tests/train/test_gpu_carry.py)
    "tiny": Size(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, intermediate=128, vocab=2048),
}


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → character map, the one ``tokenizers``' ByteLevel pre-tokenizer uses."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, chars), strict=True))


def bpe_vocab(size: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A byte-level BPE vocabulary of ``size - len(SPECIAL_TOKENS)`` tokens and its merges.

    Tokens: the 256 bytes; then every pair of printable units (space, newline and the 94 visible
    ASCII characters, 96 units); then triples (a pair and a unit), in a fixed order, until full.
    Each merge joins two tokens already in the vocabulary, as BPE requires.

    Args:
        size: the whole vocabulary, special tokens included (151,936 for Qwen3).

    Raises:
        ValueError: ``size`` is too small for the bytes and special tokens, or larger than
            the 256 + 96² + 96³ tokens this scheme makes.
    """
    table = bytes_to_unicode()
    wanted = size - len(SPECIAL_TOKENS)
    units = [table[b] for b in [0x20, 0x0A, *range(0x21, 0x7F)]]  # space, newline, visible ASCII
    if not 256 <= wanted <= 256 + len(units) ** 2 + len(units) ** 3:
        raise ValueError(f"a vocabulary of {size} tokens cannot be built (256 bytes + {len(SPECIAL_TOKENS)} "
                         f"special tokens at least, {256 + len(units) ** 2 + len(units) ** 3} at most)")
    vocab = {table[b]: b for b in range(256)}
    merges: list[tuple[str, str]] = []

    def add(left: str, right: str) -> bool:
        if len(vocab) >= wanted:
            return False
        vocab[left + right] = len(vocab)
        merges.append((left, right))
        return True

    pairs = [a + b for a in units for b in units]
    for pair in pairs:
        if not add(pair[0], pair[1]):
            break
    for pair in pairs:
        for unit in units:
            if not add(pair, unit):
                return vocab, merges
    return vocab, merges


def build_tokenizer(vocab_size: int) -> Any:
    """A ``PreTrainedTokenizerFast`` of exactly ``vocab_size`` tokens (see the module docstring)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab, merges = bpe_vocab(vocab_size)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        padding_side="left", chat_template=CHATML_TEMPLATE,
                                        additional_special_tokens=["<|im_start|>"])
    if len(tokenizer) != vocab_size:
        raise AssertionError(f"built {len(tokenizer)} tokens, not {vocab_size}")
    return tokenizer


def build_model(name: str, folder: str | Path, *, seed: int = 0, device: str | None = None) -> dict[str, Any]:
    """Write a randomly initialised Qwen3 of size ``name`` and its tokenizer into ``folder``.

    Args:
        name: a key of :data:`SIZES`.
        folder: where to write (created); loadable with ``from_pretrained(folder, local_files_only=True)``.
        seed: torch seed of the weights.
        device: where to initialise (default: CUDA when present, else CPU). On a GPU the weights
            are made and saved in bf16; on CPU in float32 (bf16 is ≈ 50× slower on CPU).

    Returns:
        What was built: size, parameters, dtype, seconds, folder.
    """
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen3Config

    started = time.perf_counter()
    size = SIZES[name]
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(size.vocab)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    config = Qwen3Config(vocab_size=size.vocab, hidden_size=size.hidden, intermediate_size=size.intermediate,
                         num_hidden_layers=size.layers, num_attention_heads=size.heads,
                         num_key_value_heads=size.kv_heads, head_dim=size.head_dim, max_position_embeddings=40960,
                         rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0}, rms_norm_eps=1e-6,
                         tie_word_embeddings=True, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    built = {"name": name, "size": asdict(size), "parameters": sum(p.numel() for p in model.parameters()),
             "dtype": str(dtype).removeprefix("torch."), "weights": "random", "seconds": time.perf_counter() - started,
             "folder": str(folder)}
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    (folder / "built.json").write_text(json.dumps(built, indent=2), encoding="utf-8")
    return built


def main(argv: list[str] | None = None) -> int:
    """``random_models.py NAME FOLDER``: build one model and print what was built."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", choices=sorted(SIZES))
    parser.add_argument("folder")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(build_model(args.name, args.folder, seed=args.seed), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
