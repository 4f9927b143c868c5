"""The frontier-qa pytest plugin: an agent's frontier cases as ordinary test items.

Mark a test with the agent and the probe settings, take the ``frontier_case`` fixture, and
the test runs once per frontier case, replayed against the agent::

    @pytest.mark.frontier(target="python:agent.py:run", curriculum="cases.jsonl", k=6)
    def test_agent(frontier_case):
        frontier_case.assert_no_regression()

Registered through the ``pytest11`` entry point (``-p frontier_qa.plugins.pytest_plugin``
before that). It is inert unless a test uses the marker: this module imports only pytest
and the standard library; the engine (:mod:`frontier_qa.plugins._pytest_suite`) is imported
the first time a marked test is collected. Options (``--frontier-*``, ini ``frontier_*``)
are only read and checked; they do nothing in a suite without marked tests.

Modes (``--frontier-mode``):

* ``auto`` (default): replay the stored cases; probe for new ones only when the test's suite
  has no stored case at all (the first run finds, later runs replay: Hypothesis' example
  database).
* ``replay``: stored cases only; the curriculum is never built or asked (CI).
* ``generate``: replay the stored cases, then probe for new ones and save them.

Each stored case is held to its *baseline* (accepted by a person, else its first
observation); a replay never changes it. ``--frontier-accept`` makes what the agent does now
the baseline of every replayed case (the way snapshot plugins' update flags work). A session
that could not judge the agent (nothing stored to replay, the target unavailable, too many
cases left undecided) ends with exit status 3 (:mod:`frontier_qa.exit_codes`), its reason
first in the terminal summary.

Under pytest-xdist the controller does not collect; each worker does, so generation runs
once per session behind a file lock in the store, and every worker reads the same cases
back from the store (see :mod:`frontier_qa.plugins._pytest_suite`). The controller builds the
terminal summary from the reports' user properties (the ones ``--junitxml`` writes).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import pytest

MARKER = "frontier"
FIXTURE = "frontier_case"
MODES = ("auto", "replay", "generate")
FLAKY_POLICIES = ("xfail", "fail")
PROPERTY_PREFIX = "frontier_"


class FrontierUnjudged(Exception):
    """An item whose case could not be judged (nothing to replay, the target unavailable).

    Raised by the ``frontier_case`` fixture: pytest reports the item as an error, and the
    session ends with exit status 3.
    """


# pytest marks UsageError final, but only a UsageError ends the session with its message and no traceback
class FrontierUsageError(pytest.UsageError, pytest.Collector.CollectError):  # type: ignore[misc]
    """A bad ``@pytest.mark.frontier`` argument or ``--frontier-*`` option.

    Also a ``CollectError``, so that raised during collection pytest shows the message (what
    was wrong and the fix), not a traceback through the plugin.
    """


@dataclass(frozen=True)
class _Option:
    dest: str
    flag: str
    ini: str
    kind: str  # "str", "path", "int>=0", "int>=1", "int", "float>=0" or "choice:a,b"
    help: str


_OPTIONS = (
    _Option("mode", "--frontier-mode", "frontier_mode", "choice:" + ",".join(MODES),
            "auto: replay stored cases, probe only for suites with none stored (default); "
            "replay: stored cases only, never generate (CI); generate: probe for new cases and save them"),
    _Option("target", "--frontier-target", "frontier_target", "str",
            "target spec for every frontier test, overriding the marker's (e.g. a new model or agent version)"),
    _Option("store", "--frontier-store", "frontier_store", "path",
            "case store directory (default .frontier-qa in pytest's rootdir; the flag is relative to the "
            "current directory, the ini key to the rootdir)"),
    _Option("seed", "--frontier-seed", "frontier_seed", "int", "the probe seed (sample i uses seed + i)"),
    _Option("budget_calls", "--frontier-budget-calls", "frontier_budget_calls", "int>=0",
            "most model calls per marked test function and process"),
    _Option("max_cost_usd", "--frontier-max-cost-usd", "frontier_max_cost_usd", "float>=0",
            "most US dollars per marked test function and process"),
    _Option("k", "--frontier-k", "frontier_k", "int>=1",
            "samples per case: exactly k with sequential=False, else the cap (too low a cap warns)"),
    _Option("config", "--frontier-config", "frontier_config", "path",
            "a frontier-qa YAML config (configs/example.yaml)"),
    _Option("flaky", "--frontier-flaky", "frontier_flaky", "choice:" + ",".join(FLAKY_POLICIES),
            "a stored case that no longer reproduces: xfail (default) or fail"),
)


@dataclass(frozen=True)
class FrontierOptions:
    """The session's ``--frontier-*`` / ``frontier_*`` values, checked.

    Attributes:
        values: option name (``"k"``, ``"target"`` ...) to its value, for the options set.
        sources: option name to ``"cli"`` or ``"ini"``.
        labels: option name to how it was written (``--frontier-k=6``, ``ini frontier_k = 6``).
    """

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return str(self.values.get("mode", "auto"))

    @property
    def flaky(self) -> str:
        return str(self.values.get("flaky", "xfail"))

    @property
    def accept(self) -> bool:
        """``--frontier-accept``: make what the agent does now the baseline of every replayed case."""
        return bool(self.values.get("accept", False))

    @property
    def repick(self) -> bool:
        """``--frontier-repick-guards``: pick each suite's guard cases again."""
        return bool(self.values.get("repick", False))


def _convert(option: _Option, raw: str, label: str) -> Any:
    kind = option.kind
    if kind.startswith("choice:"):
        choices = kind[len("choice:"):].split(",")
        if raw not in choices:
            raise FrontierUsageError(f"{label}: {raw!r} is not one of {', '.join(choices)}\n"
                                     f"  fix: write e.g. {option.flag}={choices[0]}")
        return raw
    if kind in ("str", "path"):
        if not raw.strip():
            raise FrontierUsageError(f"{label}: the value is empty\n  fix: give a value or leave the option out")
        return raw.strip()
    number: float
    try:
        number = float(raw) if kind.startswith("float") else int(raw)
    except ValueError:
        what = "a number" if kind.startswith("float") else "an integer"
        raise FrontierUsageError(f"{label}: {raw!r} is not {what}\n  fix: write e.g. {option.flag}=10") from None
    low = 1 if kind.endswith(">=1") else 0 if kind.endswith(">=0") else None
    if low is not None and number < low:
        raise FrontierUsageError(f"{label}: {raw} is below {low}\n  fix: give a value >= {low}")
    return number


def read_options(config: pytest.Config) -> FrontierOptions:
    """Read and check every ``--frontier-*`` option and ``frontier_*`` ini key (flags win)."""
    options = FrontierOptions()
    for option in _OPTIONS:
        cli = config.getoption(f"frontier_{option.dest}", default=None)
        ini = config.getini(option.ini) if cli is None else None
        if cli is not None:
            raw, source, label = str(cli), "cli", f"{option.flag}={cli}"
        elif isinstance(ini, str) and ini.strip():
            raw, source, label = ini.strip(), "ini", f"ini {option.ini} = {ini.strip()}"
        else:
            continue
        options.values[option.dest] = _convert(option, raw, label)
        options.sources[option.dest] = source
        options.labels[option.dest] = label
    for name, flag in (("accept", "--frontier-accept"), ("repick", "--frontier-repick-guards")):
        if config.getoption(f"frontier_{name}" if name == "accept" else "frontier_repick_guards", default=False):
            options.values[name] = True
            options.sources[name], options.labels[name] = "cli", flag
    return options


# --- hooks --------------------------------------------------------------------------------

OPTIONS_KEY = pytest.StashKey[FrontierOptions]()
SESSION_KEY = pytest.StashKey[Any]()  # a pytest_suite.Session, made when a marked test is collected
CASE_KEY = pytest.StashKey[Any]()  # the item's FrontierCase


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``--frontier-*`` options and their ini keys."""
    group = parser.getgroup("frontier-qa", "frontier-qa: an agent's frontier cases as test items")
    for option in _OPTIONS:
        group.addoption(option.flag, dest=f"frontier_{option.dest}", default=None, metavar=option.dest.upper(),
                        help=f"{option.help} (ini: {option.ini})")
        parser.addini(option.ini, f"frontier-qa: {option.help}", default="")
    group.addoption("--frontier-accept", dest="frontier_accept", action="store_true", default=False,
                    help="accept what the agent does now as the baseline of every replayed case "
                         "(replays never change a baseline otherwise)")
    group.addoption("--frontier-repick-guards", dest="frontier_repick_guards", action="store_true", default=False,
                    help="pick each suite's guard cases again (they stay as stored otherwise, until an accept)")


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker, read the options once, and register the frontier reporter."""
    config.addinivalue_line(
        "markers",
        f"{MARKER}(target=SPEC, curriculum=FILE|'prompted:MODEL'|object, k=, band=, budget_calls=, ...): "
        f"run the test once per frontier case of the agent; take the '{FIXTURE}' fixture (frontier-qa)",
    )
    config.stash[OPTIONS_KEY] = read_options(config)
    config.pluginmanager.register(FrontierReporter(config), "frontier-qa-reporter")


def session_of(config: pytest.Config) -> Any:
    """The frontier-qa state of this pytest process, made on first use (imports the engine)."""
    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        from frontier_qa.plugins._pytest_suite import PluginSession

        session = config.stash[SESSION_KEY] = PluginSession(config, config.stash[OPTIONS_KEY])
    return session


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize a marked test with one item per frontier case of its agent."""
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        if FIXTURE in metafunc.fixturenames:
            raise FrontierUsageError(
                f"{metafunc.definition.nodeid} takes the {FIXTURE!r} fixture but has no @pytest.mark.{MARKER}\n"
                f"  fix: add @pytest.mark.{MARKER}(target=..., curriculum=...) to the test"
            )
        return
    session_of(metafunc.config).parametrize(metafunc, marker)


@pytest.fixture
def frontier_case(request: pytest.FixtureRequest) -> Any:
    """One frontier case of the agent named by the test's ``@pytest.mark.frontier``, replayed.

    Returns a :class:`frontier_qa.session._frontier_case.FrontierCase`: the case (``prompt``,
    ``topic``, ``reference``), what was stored about it (``stored_class``, ``stored_p_hat``),
    a fresh replay (``replayed``, ``p_hat``, ``interval``, ``case_class``, ``verdict``) and
    ``sample(n)`` / ``answers(n)`` to run the agent on it again.
    """
    return session_of(request.config).case_for(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Turn a pass of a flaky case into an xfail (or a failure with ``--frontier-flaky fail``);
    mask every secret in a frontier item's report (failure text, captured output, properties).
    """
    report = yield
    if item.get_closest_marker(MARKER) is not None:
        mask_report(report)
    case = item.stash.get(CASE_KEY, None)
    reason = getattr(case, "flaky_reason", None) if getattr(case, "accepted", None) is None else None
    if reason and case is not None and report.when == "call" and report.passed:
        # never a silent pass (Hypothesis' Flaky): xfail by default, a failure on request
        if item.config.stash[OPTIONS_KEY].flaky == "fail":
            report.outcome = "failed"
            report.longrepr = f"frontier-qa: flaky case {case.id}: {reason}"
        else:
            report.outcome = "skipped"
            report.wasxfail = f"flaky: {reason}"
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, pytest.CollectReport,
                                                                          pytest.CollectReport]:
    """Mask secrets in collection reports once frontier-qa ran (it generates cases at collection)."""
    report = yield
    if collector.config.stash.get(SESSION_KEY, None) is not None:
        mask_report(report)
    return report


def mask_report(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Mask every secret (:mod:`frontier_qa.redaction`) in what pytest shows and writes of a report:
    the failure text, captured output and log sections, user properties (JUnit XML), xfail reasons.
    """
    from frontier_qa.redaction import redact

    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, reason)
        report.longrepr = (longrepr[0], longrepr[1], redact(str(longrepr[2])))
    elif longrepr is not None:
        text = str(longrepr)
        if redact(text) != text:
            report.longrepr = redact(text)
    report.sections = [(title, redact(content)) for title, content in report.sections]
    if isinstance(report, pytest.TestReport):
        report.user_properties = [(name, redact(value) if isinstance(value, str) else value)
                                  for name, value in report.user_properties]
        if isinstance(getattr(report, "wasxfail", None), str):
            report.wasxfail = redact(report.wasxfail)


@pytest.hookimpl(tryfirst=True)  # before the reporter judges: the runs' records and spend are final
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Finish the session's frontier-qa run (records, reports) if one started."""
    state = session.config.stash.get(SESSION_KEY, None)
    if state is not None:
        state.finish()


class FrontierReporter:
    """Gathers the frontier properties of every report, judges each suite once at the end (the
    same health checks and gate as ``frontier-qa probe`` / ``replay``: a found failure with
    ``gate.max_failures: 0`` fails the session), sets the exit status, prints the summary.

    Works on the xdist controller too: it sees the workers' reports (user properties included)
    and reads the suites' records from their stores.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, dict[str, str]] = {}  # nodeid -> frontier properties and outcome
        self.judged: list[tuple[str, Any]] = []  # (suite name, its Outcome)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.user_properties:
            return
        # xdist sends user_properties as lists, not tuples
        props = {str(p[0]): str(p[1]) for p in report.user_properties
                 if len(p) == 2 and str(p[0]).startswith(PROPERTY_PREFIX)}
        if "frontier_suite" not in props:
            return
        outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        if report.when == "call" or outcome != "passed":
            entry = self.results.setdefault(report.nodeid, {})
            entry.update(props)
            entry["outcome"] = outcome

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.results:
            return
        self.judged = judge_suites(self.config, self.results)
        codes = {outcome.exit_code for _, outcome in self.judged}
        from frontier_qa.exit_codes import EXIT_FINDINGS, EXIT_NO_JUDGEMENT

        if EXIT_NO_JUDGEMENT in codes and session.exitstatus in (
                pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = EXIT_NO_JUDGEMENT
        elif EXIT_FINDINGS in codes and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the gate failed: as a failing test does

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.judged:
            return
        from frontier_qa.redaction import redact

        terminalreporter.section("frontier-qa")
        for name, outcome in self.judged:
            rows = [p for _, p in sorted(self.results.items()) if p.get("frontier_suite") == name]
            lines = outcome.lines()
            at = lines.index(outcome.title) + 1
            lines[at:at] = item_lines(rows)
            for line in lines:
                bad = line.startswith(("could not judge", "gate: FAILED", "gate: COULD NOT"))
                terminalreporter.write_line(redact(line), red=bad, bold=bad)


def item_lines(rows: list[dict[str, Any]]) -> list[str]:
    """What the suite's test items were (each case once, however many tests share the suite): new or
    replayed, guards, accepted baselines, flaky findings.
    """
    cases = {p["frontier_case_id"]: p for p in rows if p.get("frontier_verdict")}
    if not cases:
        return []
    new = sum(p["frontier_verdict"] == "new" for p in cases.values())
    guards = sum(p.get("frontier_role") == "guard" for p in cases.values())
    plural = "" if guards == 1 else "s"
    out = [f"  items: {len(cases)} ({new} new, {len(cases) - new} replayed; {guards} guard{plural})"]
    accepted = sum(p.get("frontier_accepted") == "1" for p in cases.values())
    if accepted:
        out.append(f"  accepted: {accepted} baseline(s) now hold what the agent does")
    out += [f"  flaky: {cid}: {p['frontier_flaky']}" for cid, p in sorted(cases.items()) if p.get("frontier_flaky")]
    return out


def judge_suites(config: pytest.Config, results: dict[str, dict[str, Any]]) -> list[tuple[str, Any]]:
    """Each suite's outcome (:func:`~frontier_qa.session._suite_run.judge_runs`), from what its items
    reported: its store and runs, its gates, the items that could not be decided or accepted.

    Args:
        config: the pytest config (for the replay command).
        results: test node id -> its ``frontier_*`` properties and ``outcome``.
    """
    import json

    from frontier_qa.reports._gate import GateThresholds
    from frontier_qa.session import Invocation
    from frontier_qa.session._suite_run import judge_runs
    from frontier_qa.store._case_store import CaseStore

    suites: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for nodeid, props in sorted(results.items()):
        suites.setdefault(props["frontier_suite"], []).append((nodeid, props))
    judged = []
    here = str(config.invocation_params.dir)
    for name, rows in suites.items():
        first = rows[0][1]
        store = first["frontier_store"]
        shown = os.path.relpath(store, here) if os.path.commonpath([here, store]) == here else store
        generated = bool(first.get("frontier_generated"))
        unavailable = sorted({p["frontier_unjudged"] for _, p in rows
                              if p.get("frontier_unjudged_kind") == "run" and p.get("frontier_case_id")})
        invocation = Invocation(store=shown, suite=first.get("frontier_suite_file") or None,
                                pytest=replay_command(config, sorted({_function_of(n) for n, _ in rows})))
        judged.append((name, judge_runs(
            CaseStore(store), first["frontier_runs"],
            GateThresholds(**json.loads(first["frontier_gate"])["probe" if generated else "replay"]),
            generated=generated, items=int(first.get("frontier_items") or 0),
            undecided={p["frontier_case_id"] for _, p in rows if p.get("frontier_unjudged_kind") == "case"},
            unavailable=unavailable[0] if unavailable else None,
            accepted={p["frontier_case_id"] for _, p in rows if p.get("frontier_accepted") == "1"},
            target=first.get("frontier_target", ""), invocation=invocation,
            title=f"{name}: target {first.get('frontier_target', '?')}, mode {first.get('frontier_mode', '?')}, "
                  f"{len(rows)} test(s)",
            changes=next((json.loads(p["frontier_changes"]) for _, p in rows if p.get("frontier_changes")), []))))
    return judged


def _function_of(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


def replay_command(config: pytest.Config, functions: list[str]) -> str:
    """The pytest command that replays these marked functions' stored cases, never generating."""
    root, here = str(config.rootpath), str(config.invocation_params.dir)
    args = []
    for nodeid in functions:
        path, sep, rest = nodeid.partition("::")
        rel = os.path.relpath(os.path.join(root, path), here) if path else path
        args.append(rel + sep + rest)
    options = config.stash[OPTIONS_KEY]
    for option in _OPTIONS:  # repeat what this command line gave; ini keys apply again by themselves
        if option.dest != "mode" and options.sources.get(option.dest) == "cli":
            args.append(f"{option.flag}={options.values[option.dest]}")
    return "pytest " + " ".join(shlex.quote(a) for a in [*args, "--frontier-mode=replay"])


_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.@+-]+")


def case_test_id(topic: str, case_id: str) -> str:
    """The readable, stable test id of a case: ``topic/case-id`` (topic with safe characters)."""
    return f"{_ID_UNSAFE.sub('_', topic).strip('_') or 'general'}/{case_id}"
