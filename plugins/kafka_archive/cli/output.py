"""Output helpers shared by every command: JSON lines for scripts, rich tables for people.

Secrets never leave through here: :func:`emit_json` and :func:`fail` pass everything they print
through :mod:`kafka_archive.redact` (values of secret-named keys masked, URL passwords and known
secret values hidden), so a command that puts a database URL or a client configuration into an
error or a JSON line cannot leak the password.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, NoReturn, cast

import typer

from kafka_archive.redact import (
    MASK,
    is_secret_key,
    may_hold_secret,
    redact_known_values,
    redact_text,
)

if TYPE_CHECKING:
    from rich.console import Console


@cache
def _pipe_console_class() -> type[Console]:
    """:class:`PipeConsole`, defined on first use: ``rich.console`` (with ``rich.text``, its
    styles and colours: ~40-50 ms of CPU) is imported only by a command that prints through
    rich, not by ``replay run --json`` on its way to the first record (issue 27)."""
    from rich.console import Console

    class PipeConsole(Console):
        """A rich console whose closed output (``| head``) is a ``BrokenPipeError`` for the
        CLI's one handler (:mod:`kafka_archive.cli`: a quiet end, exit 141), not rich's own
        ``SystemExit(1)``."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if kwargs.get("width") is None:
                # rich fixes COLUMNS as it is when a console is made; these consoles are made
                # on first use, so without a width of their own they read it at each print
                # (as they did when made at import), or a later call's COLUMNS is ignored
                self._width = None

        def on_broken_pipe(self) -> None:
            import errno

            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "the output was closed by its reader")

    return PipeConsole


def __getattr__(name: str) -> Any:
    if name == "PipeConsole":  # (cli.tables makes wide consoles of its own)
        return _pipe_console_class()
    raise AttributeError(name)


class _LazyConsole:
    """Stands for a :class:`PipeConsole` made with ``kwargs`` on first use (every attribute,
    read or set, is the console's): rich is imported when something is printed through it."""

    def __init__(self, **kwargs: Any) -> None:
        object.__setattr__(self, "_kwargs", kwargs)
        object.__setattr__(self, "_made", None)
        object.__setattr__(self, "_lock", threading.Lock())

    def real(self) -> Console:
        """The console itself (for APIs that keep it, e.g. ``rich.progress.Progress``); one
        per stand-in, even when threads print at once."""
        made: Console | None = object.__getattribute__(self, "_made")
        if made is None:
            with object.__getattribute__(self, "_lock"):
                made = object.__getattribute__(self, "_made")
                if made is None:
                    made = _pipe_console_class()(**object.__getattribute__(self, "_kwargs"))
                    object.__setattr__(self, "_made", made)
        return made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.real(), name, value)


console = cast("Console", _LazyConsole(highlight=False, soft_wrap=True))
# soft_wrap: an error line is one line (greppable in CI and task logs), never hard-wrapped
err_console = cast("Console", _LazyConsole(stderr=True, highlight=False, soft_wrap=True))


def real_console(lazy: Console) -> Console:
    """The rich console behind :data:`console` or :data:`err_console` (built now if not yet),
    for APIs that keep a console and may check its type."""
    return lazy.real() if isinstance(lazy, _LazyConsole) else lazy  # type: ignore[attr-defined,unreachable]


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
        from rich.markup import escape

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
