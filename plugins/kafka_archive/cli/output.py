"""Output helpers shared by every command: JSON lines for scripts, rich tables for people."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False)

JSON_OPTION_HELP = "Print one JSON object per line instead of text (for scripts)."


def emit_json(obj: dict[str, Any]) -> None:
    """One JSON object on one line of standard output."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":"), default=str) + "\n")


def fail(
    message: str,
    *,
    hint: str | None = None,
    code: int = 1,
    as_json: bool = False,
    details: dict[str, Any] | None = None,
) -> NoReturn:
    """Report an error (and what to do next) and exit with ``code``."""
    if as_json:
        emit_json({"kind": "error", "message": message, "hint": hint, **(details or {})})
    else:
        err_console.print(f"[bold red]error:[/] {message}")
        if hint:
            err_console.print(f"[yellow]hint:[/] {hint}")
    raise typer.Exit(code)
