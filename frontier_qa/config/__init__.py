"""The probe configuration (split into modules in the next step)."""

from frontier_qa.config.schema import *  # noqa: F403
from frontier_qa.config.schema import __all__ as _schema_all
from frontier_qa.config.schema import _models_in, load_examples, read_overrides, resolve_layers, resolve_options  # noqa: F401

__all__ = [*_schema_all, "load_examples", "read_overrides", "resolve_layers", "resolve_options"]
