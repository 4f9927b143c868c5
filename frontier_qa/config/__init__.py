"""The probe configuration: one versioned YAML file, ``FRONTIER_QA_*`` variables and CLI flags.

Precedence, highest first: **flags** (``--target``, ``--set probing.k=6`` …) > **the config
file** > **environment** (``FRONTIER_QA_*``) > defaults. The environment is the machine's
fallback (a CI secret store sets ``FRONTIER_QA_TARGET``), the file is the project's choice,
a flag is this one run's exception.

Environment mapping: ``FRONTIER_QA_<SECTION>[__<KEY>...]``, ``__`` separating nesting levels,
names lower-cased, values read as YAML scalars (``100`` is a number, ``true`` a boolean,
``[a, b]`` a list; anything else stays the raw string)::

    FRONTIER_QA_TARGET=litellm:openai/gpt-4o-mini       → target.spec
    FRONTIER_QA_BUDGET__MAX_CALLS=500                   → budget.max_calls
    FRONTIER_QA_PROBING__K=6                            → probing.k
    FRONTIER_QA_TARGET__OPTIONS__API_BASE=http://…/v1   → target.options.api_base
    FRONTIER_QA_SHARD=2/4                               → shard

Only names whose first part is a section of :class:`ProbeConfig` are read; other
single-part ``FRONTIER_QA_*`` variables (``FRONTIER_QA_CACHE``, ``FRONTIER_QA_SMOLLM2_GGUF``) belong
to other parts of frontier-qa, and a nested name with an unknown section is an error. Values
of secret-named keys (``api_key``, ``token`` …) are kept as strings.

Model sections (``target``, ``curriculum.model``, ``validation.critic``, ``probing.judge``) may
be written as a bare spec string. String values of ``options`` may say ``${ENV_VAR}``
(resolved when the models are opened, so keys never sit in the file).

A bad configuration is a :class:`~frontier_qa.errors.ConfigError` naming each bad key, where it
came from (``probe.yaml:12``, ``FRONTIER_QA_PROBING__K``, ``--set probing.k=0``) and the fix,
with "did you mean" for misspelt keys and values; never a traceback. A ``python:`` agent file
or ``mock:`` script written in a config file is found next to that file
(:func:`~frontier_qa.config._layers.anchor_spec_files`);
other relative paths (store, output, curriculum files) are relative to the working directory.

:func:`build_probe` wires a config to the engine's parts: the target (limits, one run budget
shared by every model of the run, the sample cache under the store), the curriculum, the
validator (with SAGE's critic when configured), the judge, the store and the settings.

================  ==========================================================================
``_schema``       the sections of the YAML file, :class:`ProbeConfig`, :func:`json_schema`
``_layers``       reading flags, the file and the environment; :func:`load_config`
``_diagnostics``  validation errors as messages naming the key, where it was set and the fix
``_build``        :func:`build_probe`: target, curriculum, validator, judge, store, settings
================  ==========================================================================

The config sits above the engine, the curricula, the runtime and the reports (it wires them);
only the CLI, the pytest plugin and the trainers import it. Every public name is exported here.
"""

from __future__ import annotations

from frontier_qa.config._build import (
    ProbeParts,
    budget_tracker,
    build_curriculum,
    build_probe,
    build_settings,
    gate_thresholds,
    load_examples,
    load_tools,
    regression_policy,
    resolve_options,
    sample_cache,
)
from frontier_qa.config._layers import (
    Override,
    Sources,
    load_config,
    parse_set,
    read_env,
    read_overrides,
    read_yaml,
    resolve_layers,
)
from frontier_qa.config._schema import (
    CONFIG_VERSION,
    BandRange,
    CriticConfig,
    CurriculumConfig,
    ModelConfig,
    OutputConfig,
    ProbeConfig,
    ProbingConfig,
    ReplayConfig,
    ReplayGateConfig,
    TargetConfig,
    ValidationConfig,
    json_schema,
)
from frontier_qa.reports._gate import GateThresholds
from frontier_qa.runtime._limits import Backoff, Budget, Limits
from frontier_qa.store._comparison import RegressionPolicy
from frontier_qa.target import Sampling

__all__ = [
    "CONFIG_VERSION",
    "Backoff",
    "Budget",
    "Limits",
    "BandRange",
    "CriticConfig",
    "CurriculumConfig",
    "GateThresholds",
    "ModelConfig",
    "OutputConfig",
    "Override",
    "ProbeParts",
    "ProbeConfig",
    "ProbingConfig",
    "RegressionPolicy",
    "ReplayConfig",
    "ReplayGateConfig",
    "Sampling",
    "Sources",
    "TargetConfig",
    "ValidationConfig",
    "budget_tracker",
    "build_curriculum",
    "build_probe",
    "build_settings",
    "gate_thresholds",
    "json_schema",
    "load_config",
    "load_examples",
    "load_tools",
    "parse_set",
    "read_env",
    "read_overrides",
    "read_yaml",
    "regression_policy",
    "resolve_layers",
    "resolve_options",
    "sample_cache",
]

