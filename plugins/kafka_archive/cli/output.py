"""Output helpers shared by every command: JSON lines for scripts, rich tables for people.

Secrets never leave through here: :func:`emit_json` and :func:`fail` pass everything they print
through :mod:`kafka_archive.redact` (values of secret-named keys masked, URL passwords and known
secret values hidden), so a command that puts a database URL or a client configuration into an
error or a JSON line cannot leak the password.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from kafka_archive.redact import (
    MASK,
    is_secret_key,
    may_hold_secret,
    redact_known_values,
    redact_text,
)


class PipeConsole(Console):
    """A rich console whose closed output (``| head``) is a ``BrokenPipeError`` for the CLI's
    one handler (:mod:`kafka_archive.cli`: a quiet end, exit 141), not rich's own
    ``SystemExit(1)``."""

    def on_broken_pipe(self) -> None:
        import errno

        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the output was closed by its reader")


console = PipeConsole(highlight=False, soft_wrap=True)
# soft_wrap: an error line is one line (greppable in CI and task logs), never hard-wrapped
err_console = PipeConsole(stderr=True, highlight=False, soft_wrap=True)

JSON_OPTION_HELP = "Print one JSON object per line instead of text (for scripts)."


def redact_value(value: Any) -> Any:
    """``value`` with every secret hidden: strings redacted, the values of secret-named keys
    of mappings masked, lists/tuples walked (anything else is returned as is)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {
            k: (MASK if is_secret_key(str(k)) and value[k] not in (None, "") else redact_value(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


def emit_json(obj: dict[str, Any]) -> None:
    """One JSON object on one line of standard output, secrets redacted (:func:`redact_value`;
    the finished line is also cleared of known secret values, which covers objects that
    ``default=str`` rendered). The line is always valid JSON: masking works on the values,
    never on the JSON text's structure."""
    text = json.dumps(obj, separators=(",", ":"), default=str)
    if may_hold_secret(text):  # rare: most lines (records, offsets) skip the walk
        text = json.dumps(redact_value(obj), separators=(",", ":"), default=str)
        text = redact_known_values(text)
    sys.stdout.write(text + "\n")


def print_error(
    message: str,
    *,
    hint: str | None = None,
    as_json: bool = False,
    details: dict[str, Any] | None = None,
) -> None:
    """Print an error (and what to do next): ``error:``/``hint:`` lines on stderr, or one JSON
    object ``{"kind": "error", "message", "hint", **details}`` on stdout. Secrets redacted.

    Called while handling a closed output (a command's broad ``except OSError`` caught the
    ``BrokenPipeError`` of its own ``| head``), it re-raises that instead: the command's guard
    ends quietly (:mod:`kafka_archive.cli.pipes`), nothing is reported as a failure."""
    from kafka_archive.cli.pipes import closed_pipe

    handling = sys.exc_info()[1]
    if handling is not None and closed_pipe(handling):
        raise handling
    message = redact_text(message)
    hint = redact_text(hint) if hint else hint
    if as_json:
        emit_json({"kind": "error", "message": message, "hint": hint, **(details or {})})
    else:
        err_console.print(f"[bold red]error:[/] {escape(message)}")
        if hint:
            err_console.print(f"[yellow]hint:[/] {escape(hint)}")


def fail(
    message: str,
    *,
    hint: str | None = None,
    code: int = 1,
    as_json: bool = False,
    details: dict[str, Any] | None = None,
) -> NoReturn:
    """Report an error (and what to do next) with :func:`print_error` and exit with ``code``."""
    print_error(message, hint=hint, as_json=as_json, details=details)
    raise typer.Exit(code)
