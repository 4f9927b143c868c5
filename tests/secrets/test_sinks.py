"""No secret leaves the process: each test plants one through a path a real user hits, then greps
every file the run wrote and everything it printed.

The paths: an agent's exception (the command of the report that found the leak), an in-process
agent that prints its key and answers with it, a case prompt that holds a secret value, a tool in
the sandbox asking for an inherited variable, an HTTP agent's error body that echoes its token, an
OpenAI-compatible server's (and litellm's) 401 that echoes the key, a key in the target URL's query,
a key written literally into a config file, and a pytest session of a marked test. Each secret is
unique to its test, at least 8 characters (shorter values are never masked), and reaches the run
only through the environment, a config file or the target spec, never through frontier-qa's code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from frontier_qa.cli.app import main
from frontier_qa.redaction import MASK, redact
from frontier_qa.runtime.sandbox import Sandbox
from frontier_qa.store._case_store import CaseStore
from tests.factories import REPO

AGENTS = '''
import os
import sys


def raises(prompt):
    raise RuntimeError(f"backend refused key {os.environ['OPENAI_API_KEY']}: bad request")


def chatty(case):
    key = os.environ["FQA_PLANTED_API_KEY"]
    print("agent debug: calling the backend with", key)
    print(f"agent warning: key={key}", file=sys.stderr)
    if key not in case.prompt and case.metadata.get("needs_key"):
        raise RuntimeError("the prompt lost its key")
    return "\\\\boxed{42} (answered with " + key + ")"
'''

CASES = [
    {"id": "add-1", "prompt": "What is 17 + 25?", "reference": "42"},
    {"id": "add-2", "prompt": "What is 40 + 2?", "reference": "42"},
]


def leaks(secret: str, *roots: Path, texts: tuple[str, ...] = ()) -> list[str]:
    """Every file under ``roots`` (and every text) that holds ``secret`` in any case."""
    found = [f"printed text {i}" for i, text in enumerate(texts) if secret.lower() in text.lower()]
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            if secret.lower().encode() in path.read_bytes().lower():
                found.append(str(path))
    return found


def cli(*args: str, cwd: Path, env: dict[str, str | None]) -> subprocess.CompletedProcess[str]:
    """``frontier-qa`` as a user runs it: a new process, a real console (stdout and stderr pipes);
    ``env`` adds variables (``None`` removes one).
    """
    full = {**os.environ, "PYTHONPATH": str(REPO), "FRONTIER_QA_CACHE": str(cwd / "cache"), **env}
    full = {name: value for name, value in full.items() if value is not None}
    return subprocess.run([sys.executable, "-m", "frontier_qa", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=300)


def project(tmp_path: Path, cases: list[dict[str, object]] = CASES) -> Path:
    (tmp_path / "agents.py").write_text(AGENTS, encoding="utf-8")
    (tmp_path / "ok.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return tmp_path


def written(tmp_path: Path) -> list[Path]:
    """What a run wrote: everything but the user's own files (the agent, its cases, its config)."""
    return [p for p in tmp_path.iterdir() if p.name not in ("agents.py", "ok.jsonl", "probe.yaml")]


# --- the reported leak: an agent's exception ---------------------------------------------------


def test_the_reported_command_leaks_the_key_nowhere(tmp_path: Path) -> None:
    secret = "sk-test-secret"
    project(tmp_path)
    done = cli("-v", "probe", "--target", "python:agents.py:raises", "--curriculum", "ok.jsonl", "--k", "3",
               "--out", "o", "--store", "s", cwd=tmp_path, env={"OPENAI_API_KEY": secret})
    assert done.returncode == 3, done.stderr
    # the user's own error is still shown, key masked
    assert f"the agent raised RuntimeError: backend refused key {MASK}: bad request" in done.stdout + done.stderr
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        "cases.jsonl", "junit.xml", "report.html", "report.json", "report.md"]
    assert list((tmp_path / "s" / "runs").glob("*.jsonl"))
    assert leaks(secret, *written(tmp_path), texts=(done.stdout, done.stderr)) == []


# --- an agent that prints its key and answers with it; a prompt that holds it ---------------------


def test_a_chatty_agent_and_a_prompt_holding_the_key_leak_it_nowhere_and_still_replay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "fqa-planted-7c41d2e9"
    cases = [*CASES, {"id": "key-1", "prompt": f"Our key is {secret}. What is 6 * 7?", "reference": "42",
                      "metadata": {"needs_key": True}},
             # the sandbox runs this solution to verify the reference: it must not see the variable
             {"id": "env-1", "prompt": "What is 2 * 21?", "reference": "42",
              "solution": "import os\nprint(os.environ.get('FQA_PLANTED_API_KEY', 42))"}]
    project(tmp_path, cases)
    env: dict[str, str | None] = {"FQA_PLANTED_API_KEY": secret}
    done = cli("probe", "--target", "python:agents.py:chatty", "--curriculum", "ok.jsonl", "--k", "3",
               "--set", "probing.sequential=false", "--out", "o", "--store", "s", cwd=tmp_path, env=env)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "agent debug: calling the backend with ***" in done.stdout  # what the agent printed, masked
    assert "agent warning: key=***" in done.stderr
    assert leaks(secret, *written(tmp_path), texts=(done.stdout, done.stderr)) == []

    monkeypatch.setenv("FQA_PLANTED_API_KEY", secret)  # read back where the variable is set
    records = {r.id: r for r in CaseStore(tmp_path / "s").case_records()}
    # the stored prompt keeps a reference to the variable, read back as the value (a replay needs it)
    raw = b"".join(p.read_bytes() for p in (tmp_path / "s" / "runs").glob("*.jsonl"))
    assert b"Our key is ${secret:FQA_PLANTED_API_KEY}. What is 6 * 7?" in raw
    (key_case,) = [r for r in records.values() if r.case.metadata.get("needs_key")]
    assert key_case.case.prompt == f"Our key is {secret}. What is 6 * 7?"
    assert key_case.samples[0].text == f"\\boxed{{42}} (answered with {MASK})"  # the answer, masked
    # the sandboxed solution saw no such variable: it printed the default, so the reference verified
    assert records["env-1"].case.reference_verified and records["env-1"].case_class.value == "pass"

    again = cli("replay", "--target", "python:agents.py:chatty", "--out", "o2", "--store", "s", cwd=tmp_path,
                env=env)
    assert again.returncode in (0, 1), again.stdout + again.stderr  # the agent got the real prompt back
    assert "the prompt lost its key" not in again.stdout + again.stderr
    assert leaks(secret, *written(tmp_path), texts=(again.stdout, again.stderr)) == []

    unset = cli("replay", "--target", "python:agents.py:chatty", "--out", "o3", "--store", "s", cwd=tmp_path,
                env={"FQA_PLANTED_API_KEY": None})
    assert unset.returncode == 2
    assert "FQA_PLANTED_API_KEY" in unset.stderr and "export FQA_PLANTED_API_KEY" in unset.stderr


# --- the sandbox never holds the caller's variables ---------------------------------------------


def test_a_sandboxed_tool_cannot_print_an_inherited_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "fqa-sandbox-3e8a91"
    monkeypatch.setenv("FQA_SANDBOX_TOKEN", secret)
    result = Sandbox().run("import os\nprint(sorted(os.environ))\nprint(os.environ.get('FQA_SANDBOX_TOKEN'))")
    assert result.ok, result
    assert "FQA_SANDBOX_TOKEN" not in result.stdout and secret not in result.stdout
    assert result.stdout.strip().endswith("None")


# --- HTTP agents, API servers, keys in URLs and config files --------------------------------------


def _probe(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["probe", "--curriculum", "ok.jsonl", "--k", "3", "--set", "probing.sequential=false",
                 "--out", "o", "--store", "s", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.fixture
def inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(project(tmp_path))
    monkeypatch.setenv("FRONTIER_QA_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_an_http_agents_error_body_echoing_its_token_leaks_it_nowhere(
        inside: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(REPO / "examples" / "agents"))
    try:
        import http_agent
    finally:
        sys.path.pop(0)
    secret = "tok-http-5b7e2c90"
    monkeypatch.setenv("FQA_AGENT_TOKEN", secret)
    with http_agent.AgentServer(script=["401"] * 40) as server:
        (inside / "probe.yaml").write_text(
            f"target:\n  spec: {server.url}\n  options:\n    headers:\n"
            "      Authorization: Bearer ${FQA_AGENT_TOKEN}\n", encoding="utf-8")
        code, printed = _probe(inside, capsys, "--config", "probe.yaml")
    assert code == 2 and "HTTP 401" in printed and "bad credentials: ***" in printed, printed  # a fatal error
    assert {h["authorization"] for h in server.headers} == {f"Bearer {secret}"}  # it was sent, and echoed
    assert leaks(secret, *written(inside), texts=(printed,)) == []


def test_a_key_in_the_target_urls_query_leaks_nowhere(inside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(REPO / "examples" / "agents"))
    try:
        import http_agent
    finally:
        sys.path.pop(0)
    secret = "qk-url-61d0f3aa"
    with http_agent.AgentServer(path=f"/agent?key={secret}") as server:
        code, printed = _probe(inside, capsys, "--target", server.url)
    assert code in (0, 1), printed
    assert f"key={MASK}" in printed  # the target is still named, its key masked
    assert leaks(secret, *written(inside), texts=(printed,)) == []


@pytest.mark.parametrize("scheme", ["openai", "litellm"])
def test_an_api_servers_401_echoing_the_key_leaks_it_nowhere(
        scheme: str, inside: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.servers.fake_openai import FakeOpenAIServer

    secret = f"sk-{scheme}-planted-0d9c8b7a"
    monkeypatch.setenv("FQA_TEST_OPENAI_KEY", secret)
    with FakeOpenAIServer(script=["401"] * 40) as server:
        spec = (f"openai:tiny@{server.base_url}" if scheme == "openai" else "litellm:openai/tiny")
        options = "" if scheme == "openai" else f"    api_base: {server.base_url}\n"
        (inside / "probe.yaml").write_text(
            f"target:\n  spec: {spec}\n  options:\n    api_key: ${{FQA_TEST_OPENAI_KEY}}\n{options}", encoding="utf-8")
        code, printed = _probe(inside, capsys, "--config", "probe.yaml")
    assert code in (2, 3), printed  # a bad key: the run cannot judge the agent
    assert server.count() >= 1 and MASK in printed
    assert leaks(secret, *written(inside), texts=(printed,)) == []


def test_a_key_written_into_the_config_file_leaks_nowhere_else(
        inside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.servers.fake_openai import FakeOpenAIServer

    secret = "literal-config-key-4f2a"  # no variable holds it: the config's api_key is registered
    with FakeOpenAIServer(script=["401"] * 40) as server:
        (inside / "probe.yaml").write_text(
            f"target:\n  spec: openai:tiny@{server.base_url}\n  options:\n    api_key: {secret}\n", encoding="utf-8")
        shown, config = _probe(inside, capsys, "--config", "probe.yaml", "--show-config")
        code, printed = _probe(inside, capsys, "--config", "probe.yaml")
    assert shown == 0 and "api_key: '***'" in config
    assert code in (2, 3) and server.count() >= 1, printed
    assert leaks(secret, *written(inside), texts=(printed, config)) == []


# --- pytest: failure text, captured output, JUnit XML ---------------------------------------------


PYTEST_TEST = '''
import pytest


@pytest.mark.frontier(target="python:agents.py:chatty", curriculum="ok.jsonl", k=3, sequential=False)
def test_agent(frontier_case):
    print("test sees", frontier_case.answers(1))
    frontier_case.assert_no_regression()
    assert False, "forced failure mentioning " + frontier_case.answers(1)[0]
'''


def test_a_pytest_session_leaks_the_key_nowhere(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "fqa-pytest-9a3b5c7d"
    project(pytester.path)
    pytester.makepyfile(test_agent=PYTEST_TEST)
    monkeypatch.setenv("FQA_PLANTED_API_KEY", secret)
    monkeypatch.setenv("FRONTIER_QA_CACHE", str(pytester.path / "cache"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", "--junitxml=junit.xml",
                                           "-o", "junit_logging=all")
    text = result.stdout.str() + result.stderr.str()
    assert "forced failure mentioning" in text and "agent debug: calling the backend with ***" in text
    assert ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    assert leaks(secret, *written(pytester.path), texts=(text,)) == []


# --- the redactor itself ---------------------------------------------------------------------------


def test_what_counts_as_a_secret_and_what_never_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_CREDENTIALS", "cred-value-123")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "parallel-yes")  # a TOKEN word inside another word: no secret
    monkeypatch.setenv("FQA_SHORT_KEY", "abc123")  # shorter than 8 characters
    monkeypatch.setenv("FQA_NUMBER_TOKEN", "123456789")  # a number: masking it would destroy answers
    text = ("cred-value-123 parallel-yes abc123 123456789 https://bob:hunter22@db.example/x?q=1&api_key=zz9&k=2 "
            "Authorization: Basic dXNlcjpwYXNzd29yZA== x-api-key: abcd1234efgh "
            "sk-proj-AbCdEf0123456789AbCdEf0123456789xyz ghp_0123456789abcdefghijABCDEFGHIJ0123 AKIAABCDEFGHIJKLMNOP "
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX2hlcmU the answer is 42, task-sk-learn")
    assert redact(text) == (
        "*** parallel-yes abc123 123456789 https://***@db.example/x?q=1&api_key=***&k=2 "
        "Authorization: Basic *** x-api-key: *** *** *** *** *** the answer is 42, task-sk-learn")
    # the escaped forms a report or a JSON file gives a secret are masked as well
    monkeypatch.setenv("FQA_QUOTED_PASSWORD", 'p"a<s>s&w0rd')
    assert MASK in redact(json.dumps({"x": 'p"a<s>s&w0rd'})) and "w0rd" not in redact("p&quot;a&lt;s&gt;s&amp;w0rd")
