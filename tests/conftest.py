"""Shared test settings: everything runs offline, on CPU, with no secrets from the caller."""

from __future__ import annotations

import os

# Set before any test module imports litellm / transformers / vllm (ENVIRONMENT.md).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

pytest_plugins = ["pytester"]
