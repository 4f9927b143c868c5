"""The ``frontier-qa`` command: the root options, the commands, the exit codes.

Exit codes: 0 success / gate passed, 1 gate failed, 2 usage or configuration error.
A :class:`~frontier_qa.errors.FrontierQAError` is printed as a message with its fix,
never as a traceback.

:func:`build_app` registers every command explicitly (each command module has a
``register(app)``); importing a command module adds nothing anywhere.
"""

from __future__ import annotations

import sys
from typing import Optional

import typer

from frontier_qa import __version__
from frontier_qa.errors import FrontierQAError

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2


def _version(value: bool) -> None:
    if value:
        typer.echo(f"frontier-qa {__version__}")
        raise typer.Exit(EXIT_OK)


def _root(
    version: Optional[bool] = typer.Option(  # noqa: UP007 - typer needs Optional on 3.10
        None, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """frontier-qa command line."""


def build_app() -> typer.Typer:
    """The ``frontier-qa`` Typer app with every command registered.

    The command modules are imported here, not at module level, so that ``frontier_qa.cli``
    stays importable even while a command's optional dependency is missing.
    """
    from frontier_qa.cli import probe, score, train

    app = typer.Typer(
        name="frontier-qa",
        help="Find where an AI agent's ability ends: generate, score and replay frontier test cases.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    probe.register(app)  # probe, replay, export, merge, schema
    score.register(app)  # score
    train.register(app)  # train curriculum | coevolve | merge | summary
    return app


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the process exit code."""
    app = build_app()
    try:
        # With standalone_mode=False click returns the code of a raised Exit instead of exiting.
        rc = app(args=argv, standalone_mode=False)
    except FrontierQAError as err:
        typer.echo(f"error: {err}", err=True)
        return EXIT_USAGE
    except typer.Exit as done:
        return int(done.exit_code or 0)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    except Exception as err:  # click usage errors
        import click

        if isinstance(err, click.exceptions.ClickException):
            err.show()
            return EXIT_USAGE
        if isinstance(err, click.exceptions.Abort):
            return 130
        raise
    return rc if isinstance(rc, int) else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
