"""The ``kafka-archive`` command line.

One console script; each capability adds a sub-command group here (``segments``, ``archive``,
``catalog``, ``replay``, ``demo``). Every command accepts ``--json`` for scripts and prints
readable tables otherwise.

Exit codes (the whole CLI):

* ``0`` success;
* ``1`` a reported failure (bad input, missing catalog, unreachable store, failed run ...),
  always with an ``error:`` line and usually a ``hint:`` (one JSON error object with ``--json``);
* ``2`` a usage error found by the option parser (unknown option, missing value);
* ``70`` an internal error (a bug): one ``internal error:`` line, the path of a log file with
  the traceback, and a hint to report it (:mod:`kafka_archive.cli.crash`). A Python traceback is
  never printed.

Every command runs with log redaction installed (:func:`kafka_archive.redact.install_log_redaction`)
and its output passes through the redacting helpers of :mod:`kafka_archive.cli.output`.
"""

from __future__ import annotations

from typing import Any

import click
import typer
from typer._click.core import Context  # typer vendors Click: its own Context type
from typer.core import TyperGroup
from typer.exceptions import TyperException

__all__ = ["EXIT_INTERNAL", "app", "main"]

#: exit code of an internal error (see :mod:`kafka_archive.cli.crash`)
EXIT_INTERNAL = 70  # kept equal to kafka_archive.cli.crash.EXIT_INTERNAL
_ARGV_KEY = "kafka_archive.argv"


class _GuardedGroup(TyperGroup):
    """The root group: runs every command under the last-resort error handler and with log
    redaction on (both also apply when the app is invoked by a test runner, not only via
    :func:`main`)."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGV_KEY] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Context) -> Any:
        from kafka_archive.redact import install_log_redaction

        install_log_redaction()
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, TyperException):
            raise  # deliberate exits, usage errors (exit 2), Ctrl-C: the parser reports them
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise  # the same from code that uses (real) Click directly
        except Exception as exc:
            from kafka_archive.cli.crash import report_unexpected

            argv = list(ctx.meta.get(_ARGV_KEY, []))
            code = report_unexpected(exc, argv=["kafka-archive", *argv], as_json="--json" in argv)
            raise typer.Exit(code) from None


app = typer.Typer(
    name="kafka-archive",
    help=(
        "Archive Kafka's own log segments, catalog them, and replay any moment of history.\n\n"
        "Start with `kafka-archive segments --help` to inspect broker log files."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_GuardedGroup,
)


def _register_groups() -> None:
    """Attach every sub-command group (imported here so ``--help`` of one group does not pay
    for the imports of the others at module import time)."""
    from kafka_archive.cli import archive, catalog, replay, segments
    from kafka_archive.cli.demo import demo

    app.add_typer(segments.app, name="segments")
    archive.register(app)
    catalog.register(app)
    app.add_typer(replay.app, name="replay")
    app.command(name="demo")(demo)


def main() -> None:
    """Console-script entry point (exit codes: see the module docstring)."""
    _register_groups()
    app()
