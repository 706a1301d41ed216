"""The CLI's last-resort error handler: no Python traceback ever reaches the user.

:func:`report_unexpected` is called by the root command group (:mod:`kafka_archive.cli`) for any
exception a command let escape. Two kinds:

* a **typed error** (:func:`kafka_archive.cli.errors.is_user_error`: a
  :class:`~kafka_archive.errors.KafkaArchiveError` that is not ``internal``, or a segment_lib
  error; they carry a message naming the object and a ``hint``) is a user-facing failure like
  those commands report themselves: ``error: <message>`` and ``hint: <hint>`` on stderr (or one
  JSON error object with ``--json``), the error's exit code (:data:`EXIT_ERROR`, 1; 2 for a
  settings error);
* **anything else is a bug**: one line ``internal error: <Type>: <message>`` (secrets
  redacted), the path of a log file holding the full traceback (redacted, mode 0600, under
  :func:`error_log_dir`), a hint to report it, and exit code :data:`EXIT_INTERNAL` (70,
  ``EX_SOFTWARE`` of sysexits.h).

Typer/Click usage errors never get here (they keep exit code 2), nor do deliberate exits
(``typer.Exit``, ``SystemExit``) or Ctrl-C (Click's ``Aborted!``, exit 1).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from kafka_archive.cli.errors import is_user_error
from kafka_archive.cli.output import emit_json, print_error
from kafka_archive.errors import KafkaArchiveError
from kafka_archive.redact import redact_text
from kafka_archive.settings import SettingsError, env_var, load_settings

__all__ = ["ERROR_LOG_DIR_ENV", "EXIT_ERROR", "EXIT_INTERNAL", "error_log_dir", "report_unexpected"]

#: exit code of a reported, typed failure (the same as every command's own errors)
EXIT_ERROR = 1
#: exit code of an internal error (a bug): EX_SOFTWARE
EXIT_INTERNAL = 70
#: overrides where internal-error logs go
ERROR_LOG_DIR_ENV = env_var("error_log_dir")

_REPORT_HINT = (
    "this is a bug in kafka-archive: please report it with the command you ran and that file "
    "(secrets are already removed from it)"
)
_MAX_MESSAGE = 500


def error_log_dir() -> Path:
    """Where internal-error logs are written: ``$KAFKA_ARCHIVE_ERROR_LOG_DIR``, else
    ``$XDG_STATE_HOME/kafka-archive``, else ``~/.local/state/kafka-archive``."""
    try:
        explicit = load_settings().error_log_dir
    except SettingsError:  # reporting a crash must not crash on a bad configuration file
        explicit = os.environ.get(ERROR_LOG_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser() / "kafka-archive"


def _first_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 3] + "..."


def _write_log(exc: BaseException, argv: list[str]) -> tuple[Path | None, str | None]:
    """Write the redacted traceback to a new 0600 file; ``(path, None)`` or
    ``(None, why not)``."""
    try:
        directory = error_log_dir()
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = directory / f"internal-error-{stamp}-{os.getpid()}.log"
        body = (
            f"kafka-archive internal error at {stamp}\n"
            f"command: {redact_text(' '.join(argv))}\n\n"
            + redact_text("".join(traceback.format_exception(exc)))
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
        return path, None
    except OSError as err:
        return None, f"{type(err).__name__}: {redact_text(err)}"


def report_unexpected(exc: BaseException, *, argv: list[str], as_json: bool) -> int:
    """Report an exception a command let escape (see the module docstring); return the exit
    code the process should end with. Never raises. A closed output (``| head``) that got
    here through a command's own handler is no bug: a quiet end, exit 141."""
    from kafka_archive.cli.pipes import closed_pipe, end_quietly

    if closed_pipe(exc):
        return end_quietly()
    if is_user_error(exc):  # the one classification: kafka_archive.cli.errors
        message = redact_text(_first_line(str(exc)) or type(exc).__name__)
        hint_value: Any = getattr(exc, "hint", None)
        hint = redact_text(hint_value) if hint_value else None
        if hint and message.endswith(f". {hint}"):  # StoreError's str() ends with its hint
            message = message[: -len(hint) - 2]
        print_error(message, hint=hint, as_json=as_json, details={"error": type(exc).__name__})
        return exc.exit_code if isinstance(exc, KafkaArchiveError) else EXIT_ERROR
    message = redact_text(_first_line(str(exc)))
    shown = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    path, why_not = _write_log(exc, argv)
    where = str(path) if path else f"(not written: {why_not})"
    if as_json:
        emit_json(
            {
                "kind": "error",
                "error": "internal",
                "message": f"internal error: {shown}",
                "traceback_log": str(path) if path else None,
                "hint": _REPORT_HINT,
            }
        )
    else:
        # print() rather than rich: a message may hold '[...]' that rich would take as markup
        print(f"internal error: {shown}", file=sys.stderr)
        print(f"the full traceback is in {where}", file=sys.stderr)
        print(f"hint: {_REPORT_HINT}", file=sys.stderr)
    return EXIT_INTERNAL
