"""The root command group every console script runs under (``kafka-archive``, and the
development command ``kafka-archive-dev``): log redaction on, the last-resort error handler
(:mod:`kafka_archive.cli.crash`: no traceback ever reaches the user), and a closed output as a
quiet end with exit 141 (:mod:`kafka_archive.cli.pipes`) on every path, the command's run, its
``--help`` (printed by Click and rich before any command runs) and the flush of what is still
buffered when it returns.
"""

from __future__ import annotations

from typing import Any, ClassVar

import typer
from click.core import Context
from click.exceptions import Abort, ClickException, Exit
from typer.core import TyperGroup

from kafka_archive.cli.pipes import broken_pipe_in, closed_pipe, end_quietly, flush_output

__all__ = ["GuardedGroup"]

_ARGV_KEY = "kafka_archive.argv"


class GuardedGroup(TyperGroup):
    """A Typer group guarded as the module docstring says; :attr:`program` names the script
    in crash logs."""

    program: ClassVar[str] = "kafka-archive"

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGV_KEY] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Context) -> Any:
        from kafka_archive.redact import install_log_redaction

        install_log_redaction()
        try:
            result = super().invoke(ctx)
        except (Exit, Abort, ClickException):
            raise  # deliberate exits, usage errors (exit 2), Ctrl-C: the parser reports them
        except Exception as exc:
            if closed_pipe(exc):  # `... | head`: the reader is gone, a normal end (git, pip)
                raise typer.Exit(end_quietly()) from None
            from kafka_archive.cli.crash import report_unexpected

            # a broken pipe elsewhere (a socket) is still a failure, reported here
            argv = [self.program, *ctx.meta.get(_ARGV_KEY, [])]
            code = report_unexpected(exc, argv=argv, as_json="--json" in argv)
            raise typer.Exit(code) from None
        closed = flush_output()  # small outputs are still buffered: their reader may be gone
        if closed is not None:
            raise typer.Exit(closed)
        return result

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Click's ``main`` (parse, then :meth:`invoke`), where ``--help`` is printed: Click
        and rich end a broken pipe there with ``SystemExit(1)``; here it is exit 141, as
        everywhere else."""
        try:
            return super().main(*args, **kwargs)
        except SystemExit as exc:
            # both raise it only while handling a failed write of their own output (rich has
            # already pointed stdout at /dev/null, so the pipe cannot be asked any more)
            if exc.code == 1 and broken_pipe_in(exc.__context__):
                raise SystemExit(end_quietly()) from None
            if exc.code in (0, None):
                closed = flush_output()
                if closed is not None:
                    raise SystemExit(closed) from None
            raise
