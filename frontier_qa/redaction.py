"""One redactor for every place text leaves the process: secrets never reach a console, a log,
the case store, the sample cache, a report, a suite or a pytest report.

**What is a secret.**

* The value of every environment variable whose name says KEY, TOKEN, SECRET, PASSWORD or
  CREDENTIAL (``OPENAI_API_KEY``, ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``...), read when the text
  is written, so a variable set later is masked too.
* Every value given to :func:`register_secrets`: :func:`~frontier_qa.runtime.open_target` and
  :class:`~frontier_qa.runtime.ManagedTarget` register the ``api_key`` / token options and every
  header value of each target they open (the config's too, since it opens its targets through
  them), and an adapter's own ``secrets``.
* Text shaped like a credential (:data:`PATTERNS`): ``Authorization`` / ``api-key`` /
  ``x-api-key`` headers and key assignments (``api_key=...``), bearer tokens, credentials in
  URLs (``user:pass@``, ``?key=``, ``?api_key=``, ``?token=``...), and the key formats of
  well-known providers (OpenAI, Anthropic, GitHub, AWS, Google, Slack, Hugging Face, Stripe,
  Groq, xAI, Replicate, JSON web tokens, PEM private keys).

A value shorter than :data:`MIN_SECRET_CHARS`, a plain number or a boolean word is never a secret:
masking "42" everywhere would destroy answers and protect nothing.

**Where it applies** (the sinks, each through this module): the console and logs while a
command or a run is on (:func:`redacted_output` wraps ``sys.stdout`` / ``sys.stderr``, so what
in-process agents and libraries print is masked too, and pytest captures the masked text), the
case store's and the training runs' JSON lines, the sample cache, every report, JUnit XML,
exported suites, and pytest's reports of frontier items (failure text, captured output, user
properties). A new sink writes through :func:`redact` / :func:`redact_data` the same way.

**Case inputs** (a case's prompt, reference, tools...) are the user's own text and a replay must
send them unchanged: the store and suites keep them, but each known secret in them is written as
a reference to the environment variable that holds it, ``${secret:OPENAI_API_KEY}``
(:func:`protect`), and put back when the file is read (:func:`restore`); wherever a case is shown
it is masked like everything else.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import sys
import threading
import traceback
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO

MASK = "***"

MIN_SECRET_CHARS = 8
"""Shorter values are never secrets (an answer like "42" must never be masked)."""

# --- what a secret is ---------------------------------------------------------------------------

# option and header names whose values are secrets (lower-cased, '-' and '_' ignored)
_SECRET_NAMES = {"token", "authorization", "bearer", "proxyauthorization", "cookie", "setcookie"}
_SECRET_SUFFIXES = ("apikey", "secret", "password", "accesstoken", "authtoken", "sessiontoken",
                    "secretkey", "accesskey", "privatekey", "credential", "credentials")
# header names whose values are never secrets (every other header value is treated as one)
_PLAIN_HEADERS = {"accept", "acceptencoding", "acceptlanguage", "contenttype", "contentlength", "useragent",
                  "connection", "cachecontrol", "host", "origin", "referer", "xrequestid", "xtraceid",
                  "traceparent", "tracestate", "openaibeta", "anthropicversion", "openaiorganization",
                  "openaiproject", "xstainlessretrycount"}
_HEADER_OPTIONS = {"headers", "extraheaders", "defaultheaders", "httpheaders"}

# environment variable names: a word of the name (split at '_') says what the value is
_ENV_WORDS = frozenset({"KEY", "KEYS", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD",
                        "CREDENTIAL", "CREDENTIALS"})
_ENV_ENDINGS = ("APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL",
                "CREDENTIALS")
_NOT_SECRETS = frozenset({"true", "false", "none", "null", "enabled", "disabled"})
_NUMBER = re.compile(r"[-+]?[\d.,_]+(?:[eE][-+]?\d+)?")


def _flat(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def is_secret_name(name: str) -> bool:
    """Whether an option or header name holds a secret (``api_key``, ``Authorization``...)."""
    flat = _flat(name)
    return flat in _SECRET_NAMES or flat.endswith(_SECRET_SUFFIXES)


def is_secret_env_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret: a word of it (split at
    ``_``) is KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL (plurals too), or ends in APIKEY,
    ACCESSKEY, TOKEN, SECRET... (``OPENAI_API_KEY``, ``HF_TOKEN``, ``GITHUB_PAT_TOKEN``; not
    ``TOKENIZERS_PARALLELISM`` or ``MONKEY``).
    """
    return any(word in _ENV_WORDS or word.endswith(_ENV_ENDINGS)
               for word in re.split(r"[^A-Z0-9]+", name.upper()) if word)


def could_be_secret(value: str) -> bool:
    """Whether a value may be masked at all: long enough, and not a number or a boolean word."""
    return (len(value) >= MIN_SECRET_CHARS and value.strip().lower() not in _NOT_SECRETS
            and _NUMBER.fullmatch(value.strip()) is None)


def secret_values(options: Mapping[str, Any]) -> tuple[str, ...]:
    """The secrets among options: values of secret-named keys, and every header value except
    plain ones (``Content-Type``, ``User-Agent``...), nested mappings included; ``Bearer x``
    gives both ``Bearer x`` and ``x``.
    """
    found: list[str] = []

    def add(value: Any) -> None:
        if isinstance(value, str) and value:
            found.append(value)
            scheme, _, rest = value.partition(" ")
            if rest and scheme.lower() in ("bearer", "basic", "token"):
                found.append(rest.strip())

    for key, value in options.items():
        if isinstance(value, Mapping):
            if _flat(str(key)) in _HEADER_OPTIONS:
                for name, header in value.items():
                    if _flat(str(name)) not in _PLAIN_HEADERS:
                        add(header)
            else:
                found.extend(secret_values(value))
        elif is_secret_name(str(key)):
            add(value)
    return tuple(found)


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``options`` fit for a repr or a log line: the values :func:`secret_values` finds
    (secret-named keys, header values but plain ones) masked.
    """
    out: dict[str, Any] = {}
    for key, value in options.items():
        if isinstance(value, Mapping) and _flat(str(key)) in _HEADER_OPTIONS:
            out[key] = {name: header if _flat(str(name)) in _PLAIN_HEADERS or header is None else MASK
                        for name, header in value.items()}
        elif isinstance(value, Mapping):
            out[key] = redact_options(value)
        elif is_secret_name(str(key)) and value is not None:
            out[key] = MASK
        else:
            out[key] = value
    return out


# --- the known secrets: registered values and the environment's ----------------------------------

_registered: dict[str, None] = {}  # insertion-ordered set
_lock = threading.Lock()
_env_names: dict[Any, bool] = {}  # environment variable name (bytes on POSIX) -> is_secret_env_name


def register_secrets(values: Iterable[str]) -> None:
    """Mask these values everywhere from now on, for the rest of the process (a target's key,
    header values, an adapter's ``secrets``). Values that cannot be secrets are ignored.
    """
    fresh = [v for v in values if isinstance(v, str) and could_be_secret(v) and v not in _registered]
    if fresh:
        with _lock:
            for value in fresh:
                _registered[value] = None


def env_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The secret values of the environment: value -> the name of the variable holding it."""
    out: dict[str, str] = {}
    data = getattr(os.environ, "_data", None) if environ is None else None
    if isinstance(data, dict) and os.name == "posix":  # bytes keys: decode only the secret ones (~5 µs)
        for raw, raw_value in data.items():
            secret = _env_names.get(raw)
            if secret is None:
                secret = _env_names[raw] = is_secret_env_name(raw.decode("utf-8", "surrogateescape"))
            if secret:
                value = raw_value.decode("utf-8", "surrogateescape")
                if could_be_secret(value):
                    out.setdefault(value, raw.decode("utf-8", "surrogateescape"))
        return out
    for name, value in (os.environ if environ is None else environ).items():
        if is_secret_env_name(name) and could_be_secret(value):
            out.setdefault(value, name)
    return out


def known_secrets(extra: Iterable[str] = ()) -> frozenset[str]:
    """Every value masked now: the environment's, the registered ones, and ``extra``."""
    values = set(env_secrets())
    values.update(_registered)
    values.update(v for v in extra if isinstance(v, str) and could_be_secret(v))
    return frozenset(values)


def maskable(secrets: Iterable[str]) -> tuple[str, ...]:
    """The values among ``secrets`` that :func:`redact` masks (see :func:`could_be_secret`)."""
    return tuple(s for s in secrets if isinstance(s, str) and could_be_secret(s))


# --- shapes of credentials ----------------------------------------------------------------------

_N = MIN_SECRET_CHARS
_VALUE = r"[^\s\"'`,;}&)\]<>(\[\\]{" + str(_N) + ",}"  # never past a quote or a backslash: JSON stays whole
_START = r"(?<![A-Za-z0-9_-])"

@dataclass(frozen=True)
class Shape:
    """A kind of text shaped like a credential: the pattern, its replacement, and the markers one
    of which the text must hold (``lower``: in the lower-cased text; ``exact``: as written) before
    the pattern is tried. The markers keep the cost off ordinary text: the patterns run at every
    call of a target, and a regex over a long answer costs a millisecond, a substring test microseconds.
    """

    what: str
    pattern: re.Pattern[str]
    replacement: str
    lower: tuple[str, ...] = ()
    exact: tuple[str, ...] = ()
    needs: str = ""  # characters that must all be there too
    hint: re.Pattern[str] | None = None  # a case-sensitive superset of ``pattern`` over the lower-cased text
    anchored: bool = False  # the pattern starts at an ``exact`` marker: try it there only, not all along

    def finds(self, text: str, lower: str) -> bool:
        for c in self.needs:
            if c not in text:
                return False
        if self.anchored:  # "sk-" is in "task-based" too: match where a marker is, not a scan of the text
            for marker in self.exact:
                at = text.find(marker)
                while at != -1:
                    if self.pattern.match(text, at) is not None:
                        return True
                    at = text.find(marker, at + 1)
            return False
        if any(marker in lower for marker in self.lower) or any(marker in text for marker in self.exact):
            # case-insensitive matching costs 5x: a hint over the lower-cased text rules most text out
            return (self.hint is None or self.hint.search(lower) is not None) and self.pattern.search(text) is not None
        return False


_NAMES = ("key", "authorization", "token", "secret", "passw")
PATTERNS: tuple[Shape, ...] = (
    Shape("private key block", re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[^\"']*?(?:-----END [A-Z ]*PRIVATE KEY-----|(?=[\"']|\Z))"), MASK,
        exact=("PRIVATE KEY-----",)),
    Shape("bearer token", re.compile(r"(?i:\b(bearer\s+)[A-Za-z0-9._~+/=-]{" + str(_N) + ",})"), r"\1" + MASK,
          lower=("bearer",)),
    Shape("credential header or assignment", re.compile(
        r"(?i:(?<![A-Za-z0-9])((?:proxy-)?authorization|x-api-key|api[_-]?key|x-goog-api-key|access[_-]?token"
        r"|auth[_-]?token|refresh[_-]?token|client[_-]?secret|secret[_-]?key|password|passwd)(\"?'?\s*[:=]\s*\"?'?)"
        r"((?:basic|token|bot)\s+)?" + _VALUE + ")"), r"\1\2\3" + MASK, lower=_NAMES,
          hint=re.compile(r"(?:key|token|secret|passw(?:or)?d|authorization)[\"']?\s*[:=]")),
    Shape("credentials in a URL", re.compile(r"(?i:\b([a-z][a-z0-9+.-]*://)[^/\s:@\"'<>\\]+:[^/\s@\"'<>\\]+@)"),
          r"\1" + MASK + "@", lower=("://",), needs="@"),
    Shape("key in a URL query", re.compile(
        r"(?i:([?&;](?:key|api[_-]?key|apikey|token|access[_-]?token|auth|auth[_-]?token|secret|client[_-]?secret"
        r"|password|sig|signature)=)[^&#\s\"'<>\\]+)"), r"\1" + MASK, lower=("key=", "token=", "auth=", "secret=",
                                                                             "password=", "sig=", "signature="),),
    Shape("provider key", re.compile(
        _START + r"(?:sk-(?:ant-|proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{32,}"
        r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}"
        r"|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|xox[abposr]-[A-Za-z0-9-]{10,}"
        r"|hf_[A-Za-z0-9]{30,}|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|gsk_[A-Za-z0-9]{20,}"
        r"|xai-[A-Za-z0-9]{20,}|r8_[A-Za-z0-9]{20,}"
        r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"), MASK,
        exact=("sk-", "sk_", "rk_", "pk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA",
               "AIza", "xox", "hf_", "gsk_", "xai-", "r8_", "eyJ"), anchored=True),
)
"""The kinds of text shaped like a credential, each with its pattern and replacement."""


_ANY_MARKER = tuple(sorted({m.lower() for shape in PATTERNS for m in (*shape.lower, *shape.exact)}))


def _shaped(text: str) -> bool:
    """Whether ``text`` holds anything shaped like a credential (:data:`PATTERNS`)."""
    if len(text) < MIN_SECRET_CHARS:
        return False
    lower = text.lower()
    for marker in _ANY_MARKER:  # most text holds none: one pass of substring tests, no regex
        if marker in lower:
            break
    else:
        return False
    for shape in PATTERNS:
        if shape.finds(text, lower):
            return True
    return False


# --- masking ----------------------------------------------------------------------------------


def _variants(secret: str) -> set[str]:
    """The forms a secret takes in the files frontier-qa writes: raw, JSON-, HTML- and URL-escaped."""
    from urllib.parse import quote

    return {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
            html.escape(secret, quote=True), html.escape(secret, quote=False), quote(secret, safe="")}


_compiled: dict[frozenset[str], re.Pattern[str] | None] = {}


def _exact(secrets: frozenset[str]) -> re.Pattern[str] | None:
    rx = _compiled.get(secrets, False)
    if rx is False:
        forms = sorted({v for s in secrets for v in _variants(s)}, key=len, reverse=True)
        rx = re.compile("|".join(map(re.escape, forms))) if forms else None
        if len(_compiled) > 64:
            _compiled.clear()
        _compiled[secrets] = rx
    return rx  # type: ignore[return-value]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret masked: the known ones (:func:`known_secrets`, plus
    ``secrets``) in every escaped form, and everything shaped like a credential (:data:`PATTERNS`).
    """
    return _mask(text, _exact(known_secrets(secrets))) if text else text


def _mask(text: str, rx: re.Pattern[str] | None) -> str:
    if rx is not None:
        text = rx.sub(MASK, text)
    if len(text) < MIN_SECRET_CHARS:
        return text
    lower = text.lower()
    for shape in PATTERNS:
        if shape.finds(text, lower):
            text = shape.pattern.sub(shape.replacement, text)
            lower = text.lower()
    return text


def redact_data(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of a JSON-like value (mappings, lists, tuples, strings) with every string, keys
    included, passed through :func:`redact`.
    """
    rx = _exact(known_secrets(secrets))
    return _walk(value, lambda text: _mask(text, rx))


def _walk(value: Any, text: Any) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Mapping):
        return {(_walk(k, text) if isinstance(k, str) else k): _walk(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, text) for v in value]
    if isinstance(value, tuple):
        return tuple(_walk(v, text) for v in value)
    return value


def mentions(value: Any, secrets: Iterable[str] = ()) -> bool:
    """Whether :func:`redact` would change any string in ``value`` (strings, mappings, lists,
    tuples, dataclasses; anything else through ``str``). Cheaper than serialising ``value`` and
    redacting the text, which matters on every call of a target.
    """
    return _mentions(value, _exact(known_secrets(secrets)))


_PLAIN = frozenset({type(None), bool, int, float})


def _mentions(value: Any, rx: re.Pattern[str] | None) -> bool:
    kind = type(value)  # exact types first and plain loops, not any(): this walks every sample of every call
    if kind is str:
        return len(value) >= MIN_SECRET_CHARS and (
            (rx is not None and rx.search(value) is not None) or _shaped(value))
    if kind in _PLAIN:
        return False
    if kind is dict:
        for key, item in value.items():
            if _mentions(key, rx) or _mentions(item, rx):
                return True
        return False
    if kind is tuple or kind is list:
        for item in value:
            if _mentions(item, rx):
                return True
        return False
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None and not isinstance(value, type):
        for name in fields:
            if _mentions(getattr(value, name), rx):
                return True
        return False
    if isinstance(value, Mapping):
        return _mentions(dict(value), rx)
    if isinstance(value, (list, tuple)):
        return _mentions(list(value), rx)
    return _mentions(str(value), rx)


# --- case inputs: kept for replays, secrets as references ---------------------------------------

SECRET_REF = re.compile(r"\$\{secret:([A-Za-z_][A-Za-z0-9_]*)\}")
"""A known secret in a stored case input: ``${secret:NAME}``, NAME the environment variable
holding it (``UNNAMED`` for a registered value no variable holds: that case cannot be replayed).
"""
UNNAMED = "UNNAMED"


def protect(value: Any) -> Any:
    """A case input (any JSON-like value) as the store and suites keep it: each known secret
    written as ``${secret:NAME}``; text that merely looks like a credential is the user's own
    and stays.
    """
    named = env_secrets()
    secrets = known_secrets()
    rx = _exact(frozenset(secrets))
    if rx is None:
        return value
    by_form = {form: named.get(s, UNNAMED) for s in sorted(secrets, key=len) for form in _variants(s)}
    return _walk(value, lambda text: rx.sub(lambda m: f"${{secret:{by_form.get(m.group(), UNNAMED)}}}", text))


def restore(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A stored case input with each ``${secret:NAME}`` put back from the environment; a
    reference to a variable that is not set stays (see :func:`unresolved`).
    """
    env = os.environ if environ is None else environ

    def put_back(text: str) -> str:
        if "${secret:" not in text:
            return text
        return SECRET_REF.sub(lambda m: env.get(m.group(1)) or m.group(), text)  # empty is unset: nothing to send

    return _walk(value, put_back)


def unresolved(value: Any) -> list[str]:
    """The variables a case input still refers to (``${secret:NAME}`` not put back), sorted."""
    found: set[str] = set()
    _walk(value, lambda text: found.update(SECRET_REF.findall(text)) if "${secret:" in text else None)
    return sorted(found)


# --- the console: sys.stdout / sys.stderr while a command or run is on ----------------------------


class RedactingStream:
    """A text stream that masks secrets in what is written before passing it on to ``inner``.

    Text is held back until a line ends (``\\n`` or ``\\r``) or the stream is flushed, so a secret
    written in pieces (``print("key", key)``) is masked whole; every other attribute (``encoding``,
    ``isatty``, ``fileno``...) is the inner stream's.
    """

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self._pending = ""
        self._lock = threading.RLock()

    def write(self, text: str) -> int:
        with self._lock:
            pending = self._pending + text
            end = max(pending.rfind("\n"), pending.rfind("\r")) + 1
            if end == 0 and len(pending) < 65536:
                self._pending = pending
            else:
                end = end or len(pending)
                self._pending = pending[end:]
                self.inner.write(redact(pending[:end]))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                pending, self._pending = self._pending, ""
                self.inner.write(redact(pending))
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextlib.contextmanager
def redacted_output() -> Iterator[None]:
    """Mask secrets in everything written to ``sys.stdout`` and ``sys.stderr`` inside the block
    (frontier-qa's own output, and what agents and libraries running in this process print).
    Nested uses wrap once; the streams are put back unless someone else replaced them meanwhile.
    """
    if isinstance(sys.stdout, RedactingStream) or isinstance(sys.stderr, RedactingStream):
        yield
        return
    out, err = RedactingStream(sys.stdout), RedactingStream(sys.stderr)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        for stream in (out, err):
            with contextlib.suppress(Exception):
                stream.flush()
        if sys.stdout is out:
            sys.stdout = out.inner
        if sys.stderr is err:
            sys.stderr = err.inner


def redacted_excepthook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
    """``sys.excepthook`` for a command: an unexpected error's traceback, masked, on stderr."""
    sys.stderr.write(redact("".join(traceback.format_exception(kind, error, tb))))
    sys.stderr.flush()


__all__ = [
    "MASK", "MIN_SECRET_CHARS", "PATTERNS", "SECRET_REF", "RedactingStream", "Shape", "could_be_secret", "env_secrets",
    "is_secret_env_name", "is_secret_name", "known_secrets", "maskable", "mentions", "protect", "redact",
    "redact_data", "redact_options", "redacted_excepthook", "redacted_output", "register_secrets", "restore",
    "secret_values", "unresolved",
]
