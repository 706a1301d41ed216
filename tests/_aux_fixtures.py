"""Helpers for the auxiliary-file tests: walking the real broker fixtures.

The survey's MANIFEST.json (next to the fixtures) records, for each ``.log``, the first and last
offset found by an independent decoder; the index tests use them as cross-checks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def files_named(root: Path, pattern: str) -> list[Path]:
    """All regular files under ``root`` matching the glob ``pattern``, sorted."""
    return sorted(p for p in root.rglob(pattern) if p.is_file())


def manifest(root: Path) -> dict[str, dict[str, Any]]:
    """The survey manifest: relative path -> facts (size, sha256, first/last offset for logs)."""
    path = root / "MANIFEST.json"
    if not path.is_file():
        return {}
    files: dict[str, dict[str, Any]] = json.loads(path.read_text())["files"]
    return files
