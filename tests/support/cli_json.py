"""Run the ``kafka-archive`` CLI in this process and read its ``--json`` lines (replay tests)."""

from __future__ import annotations

import json
from typing import Any

from kafka_archive.cli import _register_groups, app
from typer.testing import CliRunner

_registered = [False]


def cli(*args: str) -> tuple[int, list[dict[str, Any]], str]:
    """``(exit code, the JSON objects printed, all output)`` of ``kafka-archive ARGS``."""
    if not _registered[0]:
        _register_groups()
        _registered[0] = True
    result = CliRunner().invoke(app, list(args))
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    return result.exit_code, lines, result.stdout + (result.stderr or "")
