"""Multi-step agent adapters: Python callables (every form) and a real HTTP agent server."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.adapters import create_adapter
from frontier_qa.adapters.workflow import (
    AgentContext,
    AgentHTTPError,
    HttpAgentAdapter,
    MalformedReplyError,
    PythonAgentAdapter,
    create_http,
    create_python,
    current_context,
    record_tool,
)
from frontier_qa.errors import ConfigError, TargetError
from frontier_qa.target import Case, ErrorKind, Sampling, ToolCall, Trajectory, Usage
from tests.factories import REPO

AGENTS = REPO / "examples" / "agents"
CASE = Case(id="c1", prompt="What is (3 + 4) * 5 - 2?", topic="arithmetic", metadata={"level": 2})


def _load_example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"test_example_{name}", AGENTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


http_agent = _load_example("http_agent")


def generate(
    adapter: Any, case: Case = CASE, n: int = 1, sampling: Sampling | None = None, start: int = 0
) -> list[Trajectory]:
    return asyncio.run(adapter.generate(case, n, sampling or Sampling(), start=start))


# ----- Python agents: the forms of the contract ---------------------------------------------


def test_sync_function_returning_text() -> None:
    def agent(task: str) -> str:
        return f"I read {len(task)} characters. \\boxed{{33}}"

    adapter = PythonAgentAdapter(agent)
    assert adapter.id.startswith("python:") and adapter.id.endswith("agent")
    (t,) = generate(adapter)
    assert t.ok and t.text == "I read 24 characters. \\boxed{33}"
    assert t.messages[-1] == {"role": "assistant", "content": t.text}
    assert t.tool_calls == () and t.n_tool_calls == 0


def test_async_function_with_recorded_tools_and_usage() -> None:
    @record_tool
    async def search(query: str, k: int = 2) -> list[str]:
        return [f"{query}-{i}" for i in range(k)]

    @record_tool(name="add")
    def plus(a: int, b: int) -> int:
        return a + b

    async def agent(task: str, ctx: AgentContext) -> dict[str, Any]:
        hits = await search("sum")
        ctx.step("planned", plan="add")
        total = plus(2, 3)
        ctx.add_usage(100, 20, cost_usd=0.01)
        return {"answer": f"\\boxed{{{total}}}", "usage": {"prompt_tokens": 5, "completion_tokens": 1},
                "cost_usd": 0.002, "tool_calls": [{"name": "lookup", "arguments": {"q": hits[0]}, "result": 1}]}

    (t,) = generate(PythonAgentAdapter(agent))
    assert t.text == "\\boxed{5}"
    assert t.tool_calls == (
        ToolCall("search", '{"k": 2, "query": "sum"}', '["sum-0", "sum-1"]'),
        ToolCall("add", '{"a": 2, "b": 3}', "5"),
        ToolCall("lookup", '{"q": "sum-0"}', "1"),
    )
    assert t.n_tool_calls == 3
    assert t.usage == Usage(105, 21) and t.cost_usd == pytest.approx(0.012)
    roles = [m["role"] for m in t.messages]
    assert roles == ["user", "tool", "step", "tool", "assistant"]
    assert t.messages[2] == {"role": "step", "content": "planned", "plan": "add"}


def test_object_forms_and_arguments_by_name() -> None:
    class WithArun:
        async def arun(self, case: Case, seed: int | None, sample_index: int) -> str:
            return f"{case.id}:{seed}:{sample_index}"

        def run(self, task: str) -> str:  # arun wins over run
            return "wrong method"

    class WithRun:
        def run(self, prompt: str, *, messages: list[dict[str, Any]]) -> str:
            return f"{prompt[:7]}|{len(messages)}"

    class Callable_:
        def __call__(self, ctx: AgentContext, task: str) -> str:  # the task need not come first
            return f"{task[:4]}|{ctx.sample_index}"

    got = generate(PythonAgentAdapter(WithArun()), n=3, sampling=Sampling(seed=10), start=2)
    base = Sampling(seed=10).seed_for(CASE, 0)  # the seed mixed with the case, then + sample index
    assert base not in (None, 10)
    assert [t.text for t in got] == [f"c1:{base + 2}:2", f"c1:{base + 3}:3", f"c1:{base + 4}:4"]
    assert [t.sample_index for t in got] == [2, 3, 4]
    assert generate(PythonAgentAdapter(WithRun()))[0].text == "What is|1"
    assert generate(PythonAgentAdapter(Callable_()), start=7)[0].text == "What|7"
    with pytest.raises(ConfigError, match="no value"):
        PythonAgentAdapter(lambda task, budget: task)
    with pytest.raises(ConfigError, match="is a class"):
        PythonAgentAdapter(WithRun)


def test_sync_agents_run_in_a_thread_and_do_not_block_the_loop() -> None:
    seen: dict[str, Any] = {}

    def agent(task: str) -> str:
        seen["thread"] = threading.current_thread() is threading.main_thread()
        seen["ctx"] = current_context()
        # the loop must stay free: a task on it sets this event (5 s bound if it were blocked)
        return "free" if seen["event"].wait(5) else "blocked"

    async def main() -> list[Trajectory]:
        seen["event"] = threading.Event()
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, seen["event"].set)
        return await PythonAgentAdapter(agent).generate(CASE, 1, Sampling())

    (t,) = asyncio.run(main())
    assert t.text == "free" and seen["thread"] is False
    assert isinstance(seen["ctx"], AgentContext) and seen["ctx"].case is CASE


def test_an_agent_exception_fails_that_sample_only() -> None:
    @record_tool
    def lookup(key: str) -> str:
        raise KeyError(key)

    def agent(task: str, sample_index: int) -> str:
        if sample_index == 1:
            lookup("missing")
        if sample_index == 2:
            raise ValueError("cannot parse this case")
        return "\\boxed{1}"

    adapter = PythonAgentAdapter(agent)
    ok, key_error, value_error = generate(adapter, n=3)
    assert ok.ok and ok.text == "\\boxed{1}"
    assert not key_error.ok and key_error.error.startswith("the agent raised KeyError: 'missing'")
    assert key_error.tool_calls == (ToolCall("lookup", '{"key": "missing"}', None, "KeyError: 'missing'"),)
    assert key_error.n_tool_calls == 1  # a call that failed was still executed
    assert value_error.error.startswith("the agent raised ValueError: cannot parse this case (at test_workflow.py:")
    assert value_error.sample_index == 2


class RateLimitError(Exception):
    """Shaped like openai.RateLimitError: a status code on the exception."""

    status_code = 429


class AuthError(Exception):
    def __init__(self) -> None:
        super().__init__("invalid api key")
        self.response = type("Response", (), {"status_code": 401})()


class AgentOutOfQuota(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (TimeoutError("slow tool"), ErrorKind.TRANSIENT),
        (ConnectionResetError("peer reset"), ErrorKind.TRANSIENT),
        (RateLimitError("slow down"), ErrorKind.RATE_LIMITED),
        (AuthError(), ErrorKind.FATAL),
        (AgentOutOfQuota("no credits"), ErrorKind.FATAL),
        (type("ReadTimeout", (Exception,), {})("read timed out"), ErrorKind.TRANSIENT),
    ],
)
def test_retryable_and_fatal_exceptions_reach_the_runtime(exc: Exception, kind: ErrorKind) -> None:
    def agent(task: str) -> str:
        raise exc

    adapter = PythonAgentAdapter(agent, fatal=(AgentOutOfQuota,))
    with pytest.raises(type(exc)):
        generate(adapter)
    verdict = adapter.classify(exc)
    assert verdict.kind is kind and type(exc).__name__ in verdict.message


def test_a_broken_return_contract_stops_with_a_clear_error() -> None:
    with pytest.raises(TargetError, match=r"return contract.*returned None"):
        generate(PythonAgentAdapter(lambda task: None))
    with pytest.raises(TargetError, match="none of"):
        generate(PythonAgentAdapter(lambda task: {"result": 4}))
    reported = generate(PythonAgentAdapter(lambda task: {"error": "gave up"}))[0]
    assert reported.text is None and reported.error == "the agent reported an error: gave up"
    with_messages = {"output": 42, "messages": [{"role": "assistant", "content": "42"}]}
    own = generate(PythonAgentAdapter(lambda task: with_messages))[0]
    assert own.text == "42" and own.messages == ({"role": "assistant", "content": "42"},)


def test_record_tool_records_an_async_failure_and_skips_a_cancelled_call() -> None:
    @record_tool
    async def fetch(key: str) -> str:
        raise LookupError(key)

    @record_tool
    async def wait(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "late"

    caught: list[BaseException] = []

    async def agent(task: str) -> str:
        try:
            await fetch("k1")
        except LookupError as exc:
            caught.append(exc)
        with pytest.raises(TimeoutError):  # the tool is cancelled mid-call: not a result, not an error
            await asyncio.wait_for(wait(60), 0.01)
        return "\\boxed{0}"

    (t,) = generate(PythonAgentAdapter(agent))
    assert t.ok and t.tool_calls == (ToolCall("fetch", '{"key": "k1"}', None, "LookupError: k1"),)
    (exc,) = caught  # re-raised as is, with the tool's own frame in its traceback
    assert exc.args == ("k1",) and exc.__traceback__ is not None
    frames = [f.name for f in traceback.extract_tb(exc.__traceback__)]
    assert frames[-1] == "fetch"


def test_record_tool_outside_an_agent_run_is_a_plain_call() -> None:
    @record_tool
    def double(x: int) -> int:
        return 2 * x

    assert double(21) == 42 and current_context() is None


# ----- Python agents from specs: the example agents --------------------------------------------


def test_calculator_agent_from_a_path_spec() -> None:
    adapter = create_adapter(f"python:{AGENTS / 'calculator_agent.py'}:solve")
    assert adapter.id.endswith("calculator_agent.py:solve")  # the id names the agent; the version is apart
    assert re.fullmatch(r"1\+src\.[0-9a-f]{8}", adapter.version() or "")  # its `version`, then its source hash
    ok, bad = generate(adapter, case=CASE), generate(adapter, case=Case(id="x", prompt="Name a colour."))
    (t,) = ok
    assert t.text == "The value is \\boxed{33}."
    assert [(c.arguments, c.result) for c in t.tool_calls] == [
        ('{"a": 3, "b": 4, "op": "+"}', "7"),
        ('{"a": 7, "b": 5, "op": "*"}', "35"),
        ('{"a": 35, "b": 2, "op": "-"}', "33"),
    ]
    steps = [m["content"] for m in t.messages if m["role"] == "step"]
    assert steps == ["parse '(3 + 4) * 5 - 2'", "compute 3 + 4", "compute 7 * 5", "compute 35 - 2"]
    assert bad[0].error.startswith("the agent raised ValueError: no arithmetic expression in the task")


def test_a_python_agents_version_is_a_hash_of_its_source(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("def run(task):\n    return '\\\\boxed{1}'\n")
    spec = f"python:{agent}:run"

    def version(**options: Any) -> str | None:
        sys.modules.pop(next((m for m in sys.modules if m.startswith("frontier_qa_agent_agent_")), ""), None)
        return create_adapter(spec, **options).version()

    plain = version()
    assert re.fullmatch(r"src\.[0-9a-f]{8}", plain or "")
    assert version() == plain  # stable while the file is unchanged
    agent.write_text(agent.read_text() + "# a comment is an edit too\n")
    edited = version()
    assert edited != plain
    assert version(version="7") == f"7+{edited}"  # a declared version adds to the hash, never replaces it
    # a package: every module of it counts
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("ANSWER = 1\n")
    (package / "agent.py").write_text("from pkg.helper import ANSWER\n\ndef run(task):\n    return str(ANSWER)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        first = create_adapter("python:pkg.agent:run").version()
        (package / "helper.py").write_text("ANSWER = 2\n")
        assert create_adapter("python:pkg.agent:run").version() != first
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[name]
    moody = f"python:{AGENTS / 'moody_agent.py'}:MoodyAgent"
    assert (create_adapter(moody, agent_kwargs={"topic": "a"}).version()
            != create_adapter(moody, agent_kwargs={"topic": "b"}).version())  # another agent


def test_configured_versions_are_in_every_cache_key(tmp_path: Path) -> None:
    from frontier_qa.runtime import open_target
    from frontier_qa.runtime._cache import SampleCache
    from frontier_qa.testing import ScriptedAdapter

    cache = SampleCache(tmp_path)
    case = Case(id="c", prompt="2 + 2?", reference="4")
    for version, cached in (("v1", False), ("v1", True), ("v2", False)):
        target = open_target(ScriptedAdapter(version=None), cache=cache, version=version)
        assert target.version() == version
        (t,) = target.sample_sync(case, 1, Sampling(seed=0))
        assert t.cached is cached  # a new version never replays another version's samples
    http = create_adapter("http://127.0.0.1:9/agent", version="2025-01")
    assert http.id == "http:http://127.0.0.1:9/agent" and http.version() == "2025-01"


def test_moody_agent_is_inconsistent_on_its_topic_only() -> None:
    adapter = create_python(f"{AGENTS / 'moody_agent.py'}:MoodyAgent", agent_kwargs={"topic": "calendar"})
    sampling = Sampling(seed=0)
    moody = Case(id="d", prompt="What day comes after the holiday?", topic="calendar")
    answers = [t.text for t in generate(adapter, case=moody, n=10, sampling=sampling)]
    again = [t.text for t in generate(adapter, case=moody, n=10, sampling=sampling)]
    assert answers == again  # seeded per sample: reproducible
    assert len(set(answers)) == 2  # one of two weekdays per sample: p* = 1/2, in the band
    steady = {t.text for t in generate(adapter, case=CASE, n=5, sampling=sampling)}
    assert steady == {"The value is \\boxed{33}."}


def test_python_spec_errors_say_what_to_fix() -> None:
    with pytest.raises(ConfigError, match="MODULE:ATTR"):
        create_python("no_colon_here")
    with pytest.raises(ConfigError, match="cannot import"):
        create_python("frontier_qa_no_such_module:run")
    with pytest.raises(ConfigError, match="no attribute"):
        create_python(f"{AGENTS / 'calculator_agent.py'}:nope")
    with pytest.raises(ConfigError, match="does not exist"):
        create_python("/nonexistent/agent.py:run")
    with pytest.raises(ConfigError, match="unknown option"):
        create_python(f"{AGENTS / 'calculator_agent.py'}:solve", temperature=0.3)
    with pytest.raises(ConfigError, match="not a class"):
        create_python(f"{AGENTS / 'calculator_agent.py'}:solve", agent_kwargs={"x": 1})


# ----- Python agent files: their folder is importable, as under `python agent.py` ----------------


def _files(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_an_agent_file_imports_the_modules_beside_it_as_python_does(tmp_path: Path, agent_imports: None) -> None:
    proj = _files(tmp_path / "proj", {
        "helpers.py": "def shout(text):\n    return text.upper()\n",
        "late.py": "SUFFIX = '!'\n",
        "agent.py": "import helpers\n\n\ndef run(task):\n    import late  # at call time\n\n"
                    "    return helpers.shout(task) + late.SUFFIX\n\n\nif __name__ == '__main__':\n    print(run('hi'))\n",
        "other.py": "from helpers import shout\n\n\ndef run(task):\n    return shout(task)\n",
    })
    assert str(proj) not in sys.path
    assert subprocess.run([sys.executable, str(proj / "agent.py")], capture_output=True, text=True,
                          cwd=tmp_path).stdout == "HI!\n"  # what the user sees with python
    adapter = create_adapter(f"python:{proj / 'agent.py'}:run")
    assert sys.path[0] == str(proj)  # first, as python puts it
    (t,) = generate(adapter, case=Case(id="c", prompt="hi"))
    assert (t.text, t.error) == ("HI!", None)  # `import late` inside run() works too: the folder stayed
    assert generate(create_adapter(f"python:{proj / 'other.py'}:run"), case=Case(id="c", prompt="yo"))[0].text == "YO"
    create_adapter(f"python:{proj / 'agent.py'}:run")
    assert sys.path.count(str(proj)) == 1  # one entry for every agent of the folder, loaded any number of times
    # a folder already on sys.path (here the current directory, as '') is not added again
    there = _files(tmp_path / "there", {"agent.py": "import helpers2\n\n\ndef run(task):\n    return helpers2.X\n",
                                        "helpers2.py": "X = 'two'\n"})
    os.chdir(there)
    try:
        sys.path.insert(0, "")
        before = list(sys.path)
        assert generate(create_adapter("python:agent.py:run"))[0].text == "two"
        assert sys.path == before
    finally:
        os.chdir(REPO)


def test_an_agent_files_version_covers_the_modules_it_imports_beside_it(tmp_path: Path, agent_imports: None) -> None:
    from frontier_qa.adapters._agent_source import fingerprint, sibling_modules

    proj = _files(tmp_path / "proj", {
        "agent.py": "import helpers\nfrom tools.search import find\n\n\ndef run(task):\n    import late\n\n"
                    "    return helpers.ANSWER + find() + late.X\n",
        "helpers.py": "import deep\n\nANSWER = 'a' + str(deep.D)\n",
        "deep.py": "D = 1\n",
        "late.py": "X = 'x'\n",
        "tools/__init__.py": "",
        "tools/search.py": "def find():\n    return 'f'\n",
        "notes.py": "UNUSED = 1\n",
    })
    spec = f"python:{proj / 'agent.py'}:run"

    def version() -> str | None:
        return create_adapter(spec).version()

    assert sibling_modules(proj / "agent.py") == {
        "deep": proj / "deep.py", "helpers": proj / "helpers.py", "late": proj / "late.py", "tools": proj / "tools"}
    first = version()
    assert re.fullmatch(r"src\.[0-9a-f]{8}", first or "") and version() == first
    # a change to any module it imports beside it, directly, at call time, through a helper, or in a
    # package beside it, is a new version: its samples are never replayed from the cache
    for name in ("helpers.py", "late.py", "deep.py", "tools/search.py", "tools/__init__.py"):
        before = version()
        (proj / name).write_text((proj / name).read_text() + "# edited\n")
        assert version() != before, name
    before = version()
    (proj / "notes.py").write_text("UNUSED = 2\n")
    assert version() == before  # a file of the folder it does not import is no part of it
    # an agent file that imports nothing beside it keeps the version it had: the hash of its file alone
    lone = _files(tmp_path / "lone", {"agent.py": "import json\n\n\ndef run(task):\n    return json.dumps(task)\n",
                                      "json.txt": "not python\n"})
    assert create_adapter(f"python:{lone / 'agent.py'}:run").version() == f"src.{fingerprint([lone / 'agent.py'])}"


def test_an_agent_file_that_fails_to_import_names_the_python_that_shows_why(tmp_path: Path, agent_imports: None) -> None:
    proj = _files(tmp_path / "proj", {"agent.py": "import no_such_helper_h1\n\n\ndef run(task):\n    return task\n"})
    with pytest.raises(ConfigError) as caught:
        create_python(f"{proj / 'agent.py'}:run")
    error = caught.value
    assert f"{proj / 'agent.py'}:1: ModuleNotFoundError: No module named 'no_such_helper_h1'" in error.message
    assert error.hint is not None
    assert f"'no_such_helper_h1' is neither a module beside the agent ({proj / 'no_such_helper_h1'}.py)" in error.hint
    assert f"`{sys.executable} {proj / 'agent.py'}` shows the whole traceback" in error.hint
    assert str(proj) not in sys.path  # a failed import leaves sys.path as it was
    shown = subprocess.run([sys.executable, str(proj / "agent.py")], capture_output=True, text=True)
    assert "ModuleNotFoundError: No module named 'no_such_helper_h1'" in shown.stderr  # the hint's command agrees
    # a module beside it that fails: the agent file's line, the module's error
    _files(proj, {"agent.py": "import broken\n\n\ndef run(task):\n    return task\n",
                  "broken.py": "raise KeyError('NO_SUCH_SETTING')\n"})
    with pytest.raises(ConfigError, match=r"agent\.py:1: KeyError: 'NO_SUCH_SETTING'") as caught:
        create_python(f"{proj / 'agent.py'}:run")
    assert "shows the whole traceback" in (caught.value.hint or "")


def test_two_agent_folders_with_a_module_of_one_name_each_run_their_own(tmp_path: Path, agent_imports: None) -> None:
    for name, value in (("a", "1"), ("b", "2")):
        _files(tmp_path / name, {"helpers.py": f"VALUE = {value!r}\n",
                                 "agent.py": "import helpers\n\n\ndef run(task):\n    return helpers.VALUE\n"})
    a = create_adapter(f"python:{tmp_path / 'a' / 'agent.py'}:run")
    assert generate(a)[0].text == "1"
    # Python keeps one module per name: b's `import helpers` is imported again, from b's folder,
    # so b never runs a's code, and a keeps the module it imported
    b = create_adapter(f"python:{tmp_path / 'b' / 'agent.py'}:run")
    assert generate(b)[0].text == "2"
    assert generate(a)[0].text == "1"
    assert a.version != b.version  # the helpers differ, so do the versions


def test_an_agent_whose_folder_comes_after_another_agents_module_is_refused(
        tmp_path: Path, agent_imports: None, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("a", "1"), ("b", "2")):
        _files(tmp_path / name, {"helpers.py": f"VALUE = {value!r}\n",
                                 "agent.py": "import helpers\n\n\ndef run(task):\n    return helpers.VALUE\n"})
    assert generate(create_adapter(f"python:{tmp_path / 'a' / 'agent.py'}:run"))[0].text == "1"
    # b's folder is on sys.path already, behind a's: its `import helpers` would find a's file
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "b")])
    with pytest.raises(ConfigError, match="already imported 'helpers'") as caught:
        create_adapter(f"python:{tmp_path / 'b' / 'agent.py'}:run")
    assert str(tmp_path / "a" / "helpers.py") in caught.value.message
    assert "another name" in (caught.value.hint or "")


# ----- HTTP agents ------------------------------------------------------------------------------


def test_http_agent_contract_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FQA_TEST_AGENT_TOKEN", "tok-9f8e7d")
    with http_agent.AgentServer() as server:
        adapter = create_http(server.url, headers={"Authorization": "Bearer ${FQA_TEST_AGENT_TOKEN}"})
        assert adapter.id == f"http:{server.url}" and "tok-9f8e7d" not in repr(adapter)
        got = generate(adapter, n=2, sampling=Sampling(temperature=0.7, seed=100), start=3)
    assert [t.text for t in got] == ["\\boxed{33}", "\\boxed{33}"]
    t = got[0]
    assert t.tool_calls == (ToolCall("eval", '{"expression": "(3 + 4) * 5 - 2"}', "33"),)
    assert t.usage == Usage(9, 3) and t.cost_usd == pytest.approx(0.001)
    first = sorted(server.requests, key=lambda r: r["sample_index"])[0]
    assert first == {
        "case_id": "c1", "prompt": CASE.prompt, "system": None, "messages": [{"role": "user", "content": CASE.prompt}],
        "topic": "arithmetic", "answer_format": "auto", "tools": [], "sample_index": 3, "n": 1,
        "seed": Sampling(seed=100).seed_for(CASE, 3),
        "sampling": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 512, "stop": [], "seed": 100},
        "metadata": {"level": 2},
    }
    assert {h["authorization"] for h in server.headers} == {"Bearer tok-9f8e7d"}


def test_http_batch_mode_reads_samples() -> None:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        return {"answer": f"#{request['sample_index']}"}

    with http_agent.AgentServer(reply, batch=True) as server:
        adapter = HttpAgentAdapter(server.url, batch=True)
        got = generate(adapter, n=3, start=5)
    assert adapter.max_n == 16 and len(server.requests) == 1 and server.requests[0]["n"] == 3
    assert [(t.text, t.sample_index) for t in got] == [("#5", 5), ("#6", 6), ("#7", 7)]


@pytest.mark.parametrize(
    ("fault", "exc_type", "kind", "retry_after"),
    [
        ("429:0.3", AgentHTTPError, ErrorKind.RATE_LIMITED, 0.3),
        ("429:-", AgentHTTPError, ErrorKind.RATE_LIMITED, None),
        ("500", AgentHTTPError, ErrorKind.TRANSIENT, None),
        ("503", AgentHTTPError, ErrorKind.TRANSIENT, None),
        ("400", AgentHTTPError, ErrorKind.FATAL, None),
        ("malformed", MalformedReplyError, ErrorKind.TRANSIENT, None),
        ("wrong", MalformedReplyError, ErrorKind.TRANSIENT, None),
    ],
)
def test_http_errors_are_classified(
    fault: str, exc_type: type[Exception], kind: ErrorKind, retry_after: float | None
) -> None:
    with http_agent.AgentServer(script=[fault]) as server:
        adapter = HttpAgentAdapter(server.url)
        with pytest.raises(exc_type) as caught:
            generate(adapter)
        verdict = adapter.classify(caught.value)
        assert (verdict.kind, verdict.retry_after) == (kind, retry_after)
        assert generate(adapter)[0].text == "\\boxed{33}"  # the next request is served normally


def test_http_timeouts_and_refused_connections_are_transient() -> None:
    import httpx

    with http_agent.AgentServer(script=["hang:2"]) as server:
        adapter = HttpAgentAdapter(server.url, timeout_s=0.3)
        with pytest.raises(httpx.TimeoutException) as caught:
            generate(adapter)
        assert adapter.classify(caught.value).kind is ErrorKind.TRANSIENT
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free, nothing listening once closed
    closed = HttpAgentAdapter(f"http://127.0.0.1:{port}/agent", timeout_s=2)
    with pytest.raises(httpx.ConnectError) as refused:
        generate(closed)
    assert closed.classify(refused.value).kind is ErrorKind.TRANSIENT


def test_http_secrets_never_reach_errors() -> None:
    with http_agent.AgentServer(script=["401"]) as server:
        adapter = HttpAgentAdapter(server.url, headers={"Authorization": "Bearer sk-live-5c4b3a2918"})
        with pytest.raises(AgentHTTPError) as caught:
            generate(adapter)
    verdict = adapter.classify(caught.value)
    assert verdict.kind is ErrorKind.FATAL
    assert "sk-live-5c4b3a2918" not in verdict.message and "sk-live-5c4b3a2918" not in str(caught.value)
    assert "401" in verdict.message and "bad credentials" in verdict.message


def test_http_agent_reported_error_is_a_failed_sample() -> None:
    with http_agent.AgentServer() as server:
        (t,) = generate(HttpAgentAdapter(server.url), case=Case(id="q", prompt="Name a colour."))
    assert t.text is None and t.error.startswith("the agent reported an error: cannot evaluate")


def test_http_options_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FQA_TEST_UNSET_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="FQA_TEST_UNSET_TOKEN"):
        HttpAgentAdapter("http://127.0.0.1:1/a", headers={"X-Api-Key": "${FQA_TEST_UNSET_TOKEN}"})
    with pytest.raises(ConfigError, match="bad option"):
        create_http("http://127.0.0.1:1/a", retries=3)
    assert HttpAgentAdapter("http://user:pw@127.0.0.1:1/a").id == "http:http://127.0.0.1:1/a"


# ----- through the runtime ----------------------------------------------------------------------


def test_through_open_target_retries_and_failed_samples() -> None:
    from frontier_qa.runtime import Backoff, Limits, open_target

    fast = Limits(backoff=Backoff(initial_s=0.01, max_s=0.05, jitter_s=0.0, max_retry_after_s=0.2))
    with http_agent.AgentServer(script=["429:0.1", "500", "malformed"]) as server:
        target = open_target(server.url, limits=fast, cache=False)
        (t,) = asyncio.run(target.sample(CASE, 1, Sampling()))
        assert t.text == "\\boxed{33}" and len(server.requests) == 4
        stats = target.stats()
        assert (stats.retries, stats.rate_limited) == (3, 1)

    calls = {"n": 0}

    def flaky(task: str, sample_index: int) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("tool server restarted")
        if sample_index == 1:
            raise ValueError("this case breaks the agent")
        return "\\boxed{7}"

    target = open_target(PythonAgentAdapter(flaky), limits=fast, cache=False)
    first, second = asyncio.run(target.sample(CASE, 2, Sampling()))
    assert first.text == "\\boxed{7}" and second.error.startswith("the agent raised ValueError")
    assert target.stats().retries == 1


def test_spec_through_open_target_with_the_tool_executor_registry() -> None:
    from frontier_qa.runtime import open_target

    target = open_target(f"python:{AGENTS / 'calculator_agent.py'}:solve", cache=False)
    (t,) = asyncio.run(target.sample(CASE, 1, Sampling()))
    assert t.text == "The value is \\boxed{33}." and t.n_tool_calls == 3
    assert json.loads(t.tool_calls[0].arguments) == {"a": 3, "b": 4, "op": "+"}
