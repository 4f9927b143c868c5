"""The files ``frontier-qa init`` writes, as text: the config, the pytest file, the workflow.

Each function is pure (a :class:`Layout` in, text out), so the committed example
``examples/github-actions/frontier-qa.yml`` can be checked against what ``init`` writes for
the example target, and the tests can load and run each file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import PurePosixPath

from frontier_qa.config._layers import python_file

INSTALL_PLACEHOLDER = "git+https://github.com/OWNER/frontier-qa.git"
"""What the workflow installs frontier-qa from until the user edits it (frontier-qa is not on PyPI)."""

GITIGNORE_LINES = (".frontier-qa/", "frontier-qa-report/")
"""The store (never committed: ``frontier-qa export`` writes the suite) and the report folder."""

SHARDS = 4


@dataclass(frozen=True)
class Layout:
    """What ``init`` was asked for, with every path relative to the repository root (POSIX form).

    Attributes:
        target: the target spec as the repository root sees it (``python:agent.py:run``).
        curriculum: a cases file (``tests/cases.jsonl``) or ``prompted:MODEL_SPEC``.
        domain: the prompted curriculum's domain.
        topics: the prompted curriculum's topics.
        config: the config file.
        test_file: the pytest file.
        suite: the committed suite the marker writes and the workflow replays.
        workflow: the GitHub Actions workflow.
        install: the pip requirement that installs frontier-qa in CI.
        requirements: the repository's requirements file, if it has one (installed, and the pip cache key).
        project: the repository's own ``pyproject.toml`` / ``setup.py``, if it has one (``pip install -e .``).
    """

    target: str
    curriculum: str
    domain: str
    topics: tuple[str, ...]
    config: str = "frontier-qa.yaml"
    test_file: str = "tests/test_frontier.py"
    suite: str = "tests/frontier_suite.yaml"
    workflow: str = ".github/workflows/frontier-qa.yml"
    install: str = INSTALL_PLACEHOLDER
    requirements: str | None = None
    project: str | None = None

    @property
    def prompted(self) -> bool:
        return self.curriculum.startswith("prompted:")

    def from_tests(self, path: str) -> str:
        """``path`` (relative to the root) as seen from the test file's folder."""
        return PurePosixPath(os.path.relpath(path, str(PurePosixPath(self.test_file).parent))).as_posix()


def key_variable(spec: str) -> str | None:
    """The environment variable that holds the API key of a model spec (None: no key)."""
    kind, _, rest = spec.partition(":")
    if kind == "litellm" and "/" in rest:
        return f"{rest.split('/', 1)[0].upper().replace('-', '_')}_API_KEY"
    if kind == "openai" and "@" not in rest:
        return "OPENAI_API_KEY"
    return None


def _keys(layout: Layout) -> list[str]:
    specs = [layout.target] + ([layout.curriculum.removeprefix("prompted:")] if layout.prompted else [])
    return list(dict.fromkeys(k for k in map(key_variable, specs) if k))


def config_text(layout: Layout) -> str:
    """``frontier-qa.yaml``: the target, the curriculum, budgets, the gates and the committed suite."""
    if layout.prompted:
        topics = "[" + ", ".join(layout.topics) + "]"
        curriculum = f"""curriculum:
  type: prompted
  model: {layout.curriculum.removeprefix("prompted:")}   # the model that writes tasks (its key: from the environment)
  domain: {layout.domain}             # math | general | tools | open_ended | workflow
  topics: {topics}                    # rotated through; [] lets the model pick
"""
    else:
        curriculum = f"""curriculum:
  type: file
  path: {layout.curriculum}   # JSONL/YAML cases: {{"id", "prompt", "reference", "topic"}} per case
"""
    return f"""# frontier-qa configuration, written by `frontier-qa init` (edit freely).
#
#   frontier-qa probe --config {layout.config}                 # look for frontier cases
#   frontier-qa probe --config {layout.config} --show-config   # the resolved values
#   frontier-qa schema                                          # the JSON Schema of this file
#
# Every key is optional except the target; keys left out take their defaults. Precedence:
# flags (--set probing.k=6) > this file > FRONTIER_QA_* variables > defaults. Relative paths
# are relative to the folder frontier-qa runs in: run it from the repository root (the
# workflow does). Keep API keys out of this file: options may say ${{MY_KEY}}.
version: 1

# The agent under test. A python: agent is pinned to its file in this repository, so a replay on
# a pull request samples the agent as the PR changed it; frontier-qa adds a hash of its source to
# its version, and a changed agent never replays cached answers of the old one.
target:
  spec: {layout.target}
  limits:
    max_concurrency: 8      # calls in flight at once
    timeout_s: 120          # seconds per call before it is retried

# Where cases come from when probing (replays only read the committed suite).
{curriculum}
# What one run may spend, all models together; the run stops cleanly when it runs out.
budget:
  max_calls: 2000
  max_cost_usd: 5.0

# How cases are sampled and classified: in rounds, until the posterior of a case's true majority
# share p* says where it lies; frontier = P(p* in the band) >= 0.9 (docs/explanation/sampling.md).
probing:
  policy: calibrated        # up to 30 answers per case; fixed: Agent0's k = 10, frontier = p̂ in the band
  band: agent0              # 0.3 <= p* <= 0.8
  seed: 0

store: .frontier-qa         # the case store: not committed (.gitignore), export a suite instead

output:
  dir: frontier-qa-report   # cases.jsonl, report.json, junit.xml, report.md, report.html

# `frontier-qa probe` (and the nightly merge) exits 1 when a limit is broken (null: no limit),
# 3 when it could not judge the agent (target unavailable, every call failed, no valid case).
gate:
  max_failures: 0           # stably wrong against a verified reference
  max_unresolved_share: 0.2
  max_regressions: 0

# `frontier-qa replay` on pull requests: the committed suite, and a gate that fails on
# regressions only (known findings stay known findings until someone accepts new behaviour).
replay:
  suite: {layout.suite}
  guards: 10                # stable, correct cases kept as guards
  gate:
    max_regressions: 0
"""


def is_file_spec(spec: str) -> bool:
    """Whether ``spec`` is ``python:path/to/agent.py:attr`` (an agent file, not a module name)."""
    return python_file(spec) is not None


def _marker_target(layout: Layout) -> str:
    agent = python_file(layout.target)
    if agent is None:
        return layout.target
    module_ref, attr = agent
    return f"python:{layout.from_tests(module_ref)}:{attr}"


def _commands(layout: Layout) -> str:
    rows = [(f"python -m pytest {layout.test_file}", f"1st run: probe, write {layout.suite}"),
            (f"git add {layout.suite}", "commit it: CI replays it"),
            (f"python -m pytest {layout.test_file} --frontier-mode=replay", "the committed cases only"),
            (f"python -m pytest {layout.test_file} --frontier-mode=generate", "replay, then look for new cases")]
    width = max(len(command) for command, _ in rows)
    return ("".join(f"    {command.ljust(width)}   # {why}\n" for command, why in rows)
            + f"    python -m pytest {layout.test_file} --frontier-mode=replay --frontier-accept\n"
            + "        # the agent changed on purpose: its behaviour is the new baseline (commit the suite)\n")


def test_text(layout: Layout) -> str:
    """The pytest file: one ``@pytest.mark.frontier`` test over the stored / committed cases."""
    curriculum = "" if layout.prompted else f'    curriculum="{layout.from_tests(layout.curriculum)}",\n'
    keys = _keys(layout)
    needs = (f"\nThe first run calls the models in {layout.config}: set {' and '.join(keys)} first.\n"
             if keys else "")
    return f'''"""Frontier cases of {layout.target} as pytest tests (written by `frontier-qa init`).

{_commands(layout)}
Each stored frontier, failure or suspect case is one test item, and so are up to 10 stable,
correct cases as guards. Each is held to its baseline by a statistical test; a replay never
moves a baseline. Paths in the marker are relative to this file's folder; the config holds
the rest (budgets, gates, the curriculum) and is what `frontier-qa replay` reads in CI.
{needs}"""

import pytest


@pytest.mark.frontier(
    target="{_marker_target(layout)}",
    config="{layout.from_tests(layout.config)}",
{curriculum}    suite="{layout.from_tests(layout.suite)}",
)
def test_frontier(frontier_case):
    frontier_case.assert_no_regression()
'''


def _setup(layout: Layout, indent: str = "      ") -> str:
    """The steps every job starts with: checkout, Python, install frontier-qa and the agent's needs."""
    cache = ""
    if layout.requirements or layout.project:
        cache = ("\n          cache: pip   # keyed on the file below"
                 f"\n          cache-dependency-path: {layout.requirements or layout.project}")
    extra = ""
    if layout.requirements:
        extra += f"\n          pip install -r {layout.requirements}   # the agent's dependencies"
    if layout.project:
        extra += "\n          pip install -e .   # this repository's package (where the agent lives)"
    return f"""{indent}- uses: actions/checkout@v4
{indent}- uses: actions/setup-python@v5
{indent}  with:
{indent}    python-version: "3.11"{cache}
{indent}- name: Install frontier-qa
{indent}  run: |
{indent}    if [[ "$FRONTIER_QA_INSTALL" == *OWNER* ]]; then
{indent}      echo "::error::set FRONTIER_QA_INSTALL at the top of this workflow to where frontier-qa is installed from (it is not on PyPI)"
{indent}      exit 2
{indent}    fi
{indent}    pip install "$FRONTIER_QA_INSTALL"{extra}
""".replace("\n          ", f"\n{indent}    ")


def _summary_step(report: str, what: str) -> str:
    return f"""      - name: Write report.md to the job summary
        if: always()
        run: |
          if [ -f {report}/report.md ]; then
            cat {report}/report.md >> "$GITHUB_STEP_SUMMARY"
          else
            echo "frontier-qa wrote no report: the {what} step's log says why." >> "$GITHUB_STEP_SUMMARY"
          fi
"""


def _upload(name: str, path: str, when: str = "always()") -> str:
    return f"""      - name: Upload {name}
        if: {when}
        uses: actions/upload-artifact@v4
        with:
          name: {name}
          path: {path}
          if-no-files-found: warn
"""


def workflow_text(layout: Layout) -> str:
    """The GitHub Actions workflow: replay on pull requests, shard + merge on schedule."""
    keys = _keys(layout)
    target_keys = [k for k in keys if k == key_variable(layout.target)]
    secrets = "".join(f"      {k}: ${{{{ secrets.{k} }}}}\n" for k in keys)
    replay_env = ("    env:   # the target's API key, from a repository secret (never written to logs or reports)\n"
                  + "".join(f"      {k}: ${{{{ secrets.{k} }}}}\n" for k in target_keys)) if target_keys else ""
    probe_env = ("    env:   # API keys from repository secrets (frontier-qa never writes them to logs or reports)\n"
                 + secrets) if keys else ""
    nightly = "github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'"
    cfg, suite = layout.config, layout.suite
    against = (f"the agent as this PR changed it:\n#   the target in {cfg} is {layout.target}, a file in this repository"
               if is_file_spec(layout.target) else f"{layout.target} (the target in {cfg})")
    installs = "the git URL in FRONTIER_QA_INSTALL"
    if layout.project:
        installs += ", then this repository with `pip install -e .`"
    return f"""# frontier-qa for {layout.target}, written by `frontier-qa init`.
#
# * Pull requests: replay the committed suite ({suite}: the frontier cases found so far,
#   stable correct cases as guards, each with its baseline) against {against}. Each case is held to
#   its baseline by a statistical test (at most a 1% chance that an unchanged agent fails the
#   job). A regression keeps the job red until the agent is fixed or someone accepts the new
#   behaviour and commits the suite:
#       python -m pytest {layout.test_file} --frontier-mode=replay --frontier-accept
#   Create the suite once before the first PR: `python -m pytest {layout.test_file}`, commit {suite}.
# * Nightly (and by hand): probe for new cases in {SHARDS} shards (each takes the cases whose id
#   hashes to it), merge the shards' stores, gate the merged run, upload the report and the merged
#   store. Commit new cases with
#       frontier-qa export --store merged-store --suite {suite} --append
#   after downloading the frontier-qa-merged-store artifact.
#
# Exit codes, passed on as the job's result: 0 the gate passed, 1 findings (regressions,
# failures over the gate's limits), 2 a usage or configuration error, 3 frontier-qa could not
# judge the agent (target unavailable, every call failed, nothing to replay): a red job, never
# a silent green one. report.md goes to the job summary and the HTML report is uploaded as an
# artifact, also when the job fails.
#
# Install: frontier-qa is not on PyPI. This workflow installs it from {installs}.
# Edit FRONTIER_QA_INSTALL below: a git URL of your frontier-qa repository or fork, pinned to a
# tag or commit (git+https://github.com/ORG/frontier-qa.git@v0.1.0), or `frontier-qa @ file:...`
# for a wheel you commit. Add the agent's own dependencies to the install step.
name: frontier-qa

on:
  pull_request:
  schedule:
    - cron: "17 3 * * *"        # nightly, 03:17 UTC
  workflow_dispatch:

permissions:
  contents: read

concurrency:   # a new push to a pull request cancels its older replay
  group: frontier-qa-${{{{ github.workflow }}}}-${{{{ github.event_name }}}}-${{{{ github.ref }}}}
  cancel-in-progress: ${{{{ github.event_name == 'pull_request' }}}}

defaults:
  run:
    shell: bash   # bash --noprofile --norc -eo pipefail: any failing command fails its step

env:
  FRONTIER_QA_INSTALL: "{layout.install}"
  LITELLM_LOCAL_MODEL_COST_MAP: "True"   # litellm reads its cost map from the package, offline

jobs:
  replay:
    name: replay {suite}
    if: github.event_name == 'pull_request'
    runs-on: ubuntu-latest
    timeout-minutes: 30
{replay_env}    steps:
{_setup(layout)}      - name: Replay the committed suite (1 regressions, 2 usage error, 3 could not judge)
        run: |
          if [ ! -f {suite} ]; then
            echo "::error file={suite}::no committed suite: run 'python -m pytest {layout.test_file}' and commit {suite}"
            exit 2
          fi
          frontier-qa replay --config {cfg} --suite {suite} --out frontier-qa-report
{_summary_step("frontier-qa-report", "replay")}{_upload("frontier-qa-replay-report", "frontier-qa-report/")}
  probe:
    name: probe shard ${{{{ matrix.shard }}}}/{SHARDS}
    if: {nightly}
    runs-on: ubuntu-latest
    timeout-minutes: 60
{probe_env}    strategy:
      fail-fast: false   # a failing shard must not cancel the others
      matrix:
        shard: [{", ".join(str(i) for i in range(1, SHARDS + 1))}]
    steps:
{_setup(layout)}      - name: Probe shard ${{{{ matrix.shard }}}}/{SHARDS}
        env:
          SHARD: ${{{{ matrix.shard }}}}/{SHARDS}
          RUN_ID: nightly-${{{{ github.run_id }}}}   # one run for all shards: the merge joins them
        run: |
          rc=0
          frontier-qa probe --config {cfg} --shard "$SHARD" --run-id "$RUN_ID" \\
            --store shard-store --out shard-report --progress plain || rc=$?
          # A shard's own gate sees only its share of the cases: findings (1) are judged by the
          # merge job. A shard the curriculum gave no case (3, 0 cases) is not a failure either.
          if [ "$rc" -eq 1 ]; then exit 0; fi
          if [ "$rc" -eq 3 ] && python - <<'EOF'
          import json, sys
          report = json.load(open("shard-report/report.json"))
          codes = [h["code"] for h in report["gate"]["health"]]
          sys.exit(0 if report["total"] == 0 and codes == ["no-valid-case"] else 1)
          EOF
          then
            echo "shard $SHARD got no case; the merged run is judged"
            exit 0
          fi
          exit "$rc"   # 0, or 2 (usage error) / 3 (could not judge the agent) / 130
      - name: Upload the shard's store
        uses: actions/upload-artifact@v4
        with:
          name: frontier-qa-store-${{{{ matrix.shard }}}}
          path: |
            shard-store/
            !shard-store/cache/
          include-hidden-files: true   # the store's .gitignore and lock file
          if-no-files-found: error

  merge:
    needs: probe
    # not on pull requests (the probe jobs are skipped there); after failed shards too
    if: always() && ({nightly}) && needs.probe.result != 'cancelled'
    runs-on: ubuntu-latest
    timeout-minutes: 20
    steps:
{_setup(layout)}      - uses: actions/download-artifact@v4
        with:
          pattern: frontier-qa-store-*
          path: shards   # one folder per artifact: shards/frontier-qa-store-1/ ...
      - name: Merge the shards, report and gate (1 findings, 2 usage error, 3 could not judge)
        run: |
          shopt -s nullglob
          stores=(shards/frontier-qa-store-*/)
          if [ "${{#stores[@]}}" -eq 0 ]; then
            echo "::error::no shard uploaded a store: see the probe jobs' logs"
            exit 3
          fi
          frontier-qa merge "${{stores[@]}}" --into merged-store --config {cfg} --out frontier-qa-report
{_summary_step("frontier-qa-report", "merge")}{_upload("frontier-qa-report", "frontier-qa-report/")}{_upload("frontier-qa-merged-store", "merged-store/")}"""
