"""The ``frontier-qa`` command: the root options, the commands, the exit codes.

Exit codes (:mod:`frontier_qa.exit_codes`): 0 the gate passed, 1 it failed (findings), 2 a
usage or configuration error, 3 the run could not judge the agent, 130 interrupted. A
:class:`~frontier_qa.errors.FrontierQAError` is printed as a message with its fix, and every
click / typer usage error (an unknown command or option, a bad value, no command at all) as
click prints it; never a traceback.

:func:`build_app` registers every command explicitly (each command module has a
``register(app)``); importing a command module adds nothing anywhere.
"""

from __future__ import annotations

import logging
import sys

import typer

from frontier_qa import __version__
from frontier_qa.errors import FrontierQAError
from frontier_qa.exit_codes import EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

EXIT_GATE_FAILED = EXIT_FINDINGS  # the name before 0.2


def _version(value: bool) -> None:
    if value:
        typer.echo(f"frontier-qa {__version__}")
        raise typer.Exit(EXIT_OK)


class _Stderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (a test's capture, a redirected stream),
    each message redacted once more (secrets never reach the console, whatever a module logs).
    """

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:  # StreamHandler.__init__ assigns it
        pass

    def format(self, record: logging.LogRecord) -> str:
        from frontier_qa.redaction import redact

        return redact(super().format(record))  # also where stderr is not wrapped (a library's own use)


def configure_logging(verbosity: int) -> None:
    """The ``frontier_qa`` loggers on stderr: warnings by default, ``-v`` INFO, ``-vv`` DEBUG.

    Only stderr: ``--json`` output and reports on stdout stay clean. Calling it again
    replaces the handler it installed before; :func:`main` removes it when the command ends
    (a process that calls ``main()`` in-process, like a test, keeps its own logging).
    """
    reset_logging()
    logger = logging.getLogger("frontier_qa")
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler = _Stderr()
    fmt = "frontier-qa: %(message)s" if verbosity <= 0 else "frontier-qa %(levelname)s %(name)s: %(message)s"
    handler.setFormatter(logging.Formatter(fmt))
    logger.addHandler(handler)
    logger.setLevel(level)


def reset_logging() -> None:
    """Undo :func:`configure_logging` (the handler and the level it set)."""
    logger = logging.getLogger("frontier_qa")
    for handler in [h for h in logger.handlers if isinstance(h, _Stderr)]:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


def _root(
    version: bool | None = typer.Option(  # noqa: UP007 - typer needs Optional on 3.10
        None, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    verbose: int = typer.Option(
        0, "--verbose", "-v", count=True,
        help="Log more to stderr: -v retries, rate-limit waits, sandbox fallbacks; -vv everything (DEBUG).",
    ),
) -> None:
    """frontier-qa command line."""
    configure_logging(verbose)


def command_group(name: str, help: str) -> typer.Typer:
    """A Typer app or command group as every one of ours is made: help without arguments, no
    shell-completion commands, and plain tracebacks off (:func:`main` reports errors itself).
    """
    return typer.Typer(name=name, help=help, no_args_is_help=True, add_completion=False,
                       pretty_exceptions_enable=False)


def build_app() -> typer.Typer:
    """The ``frontier-qa`` Typer app with every command registered.

    The command modules are imported here, not at module level, so that ``frontier_qa.cli``
    stays importable even while a command's optional dependency is missing.
    """
    from frontier_qa.cli import _accept as accept
    from frontier_qa.cli import _cases as cases
    from frontier_qa.cli import _init as init
    from frontier_qa.cli import _probe as probe
    from frontier_qa.cli import _score as score
    from frontier_qa.cli import _suite as suite
    from frontier_qa.cli import _train as train

    app = command_group("frontier-qa", "Find where an AI agent's ability ends: generate, score and replay "
                                       "frontier test cases.")
    app.callback()(_root)
    probe.register(app)  # probe, replay
    suite.register(app)  # export, merge, schema
    accept.register(app)  # accept
    init.register(app)  # init
    cases.register(app)  # cases list | show | diff
    score.register(app)  # score
    train.register(app)  # train curriculum | coevolve | merge | summary
    return app


def _click_kind(err: BaseException) -> str | None:
    """What a click or typer exception is: ``"exit"``, ``"abort"``, ``"usage"`` or ``None``.

    Typer raises click's classes (``click.exceptions``) in some versions and its own copies
    (``typer._click.exceptions``, ``typer.exceptions``) in others, so they are recognised by
    their class names along the MRO, whichever module they come from.
    """
    names = {klass.__name__ for klass in type(err).__mro__}
    if "Exit" in names and hasattr(err, "exit_code"):
        return "exit"
    if "Abort" in names:
        return "abort"
    if names & {"ClickException", "UsageError"} and callable(getattr(err, "show", None)):
        return "usage"
    return None


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the process exit code."""
    from frontier_qa.redaction import redacted_excepthook, redacted_output

    app = build_app()
    if sys.excepthook is sys.__excepthook__:  # an unexpected error's traceback, masked too
        sys.excepthook = redacted_excepthook
    try:
        # With standalone_mode=False click returns the code of a raised Exit instead of exiting.
        # Everything the command, the agents it runs in this process and their libraries print
        # passes the redactor (frontier_qa.redaction): no secret reaches the console.
        with redacted_output():
            rc = app(args=argv, standalone_mode=False)
    except FrontierQAError as err:
        with redacted_output():
            typer.echo(f"error: {err}", err=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except Exception as err:  # click / typer: usage errors, Exit, Abort
        kind = _click_kind(err)
        if kind == "exit":
            return int(getattr(err, "exit_code", 0) or 0)
        if kind == "abort":
            typer.echo("aborted", err=True)
            return EXIT_INTERRUPTED
        if kind == "usage":
            with redacted_output():
                err.show()  # type: ignore[attr-defined]  # the message and "Try 'frontier-qa --help'"
            return EXIT_USAGE
        raise
    finally:
        reset_logging()
    return rc if isinstance(rc, int) else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
