"""docs/architecture.md names only code that exists.

Every path the page names in backticks (``x.py``, ``x.c``, ``x.h``, ``x/``) must resolve to a
file or folder of the repository, and every dotted ``kafka_archive.…``/``segment_lib.…`` name to a
module (or a name defined in one). A path resolves against, in order: the repository root,
``plugins/``, ``plugins/kafka_archive/``, ``segment_lib/``, ``tests/dev/`` (the harness), the folder
named by the nearest heading above it, and the folder named by the first cell of its table row, and
the folders named before it on the same line, so the page can stay readable (``plan.py`` in the
``replay/`` row, after ``planning/``) without naming what is gone.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "architecture.md"
PATH_TOKEN = re.compile(r"^[\w./-]*(?:\.py|\.c|\.h|\.pyi|/)$")
DOTTED = re.compile(r"^(?:kafka_archive|segment_lib)(?:\.\w+)+$")
FIXED_ROOTS = (
    REPO,
    REPO / "plugins",
    REPO / "plugins" / "kafka_archive",
    REPO / "segment_lib",
    REPO / "tests" / "dev",
)


def _dirs_named(text: str, bases: tuple[Path, ...] = ()) -> list[Path]:
    """Folders named in backticks in ``text`` (a heading or a first table cell), against the
    fixed roots and ``bases``."""
    found = []
    for token in re.findall(r"`([^`]+)`", text):
        token = token.rstrip("/")
        # every match, not the first: an ignored folder of the same name at a fixed root
        # (`build/` of a compiled extension at the repository's root) must not hide the one meant
        found += [
            root / token for root in (*FIXED_ROOTS, *bases) if token and (root / token).is_dir()
        ]
    return found


def _resolves(token: str, bases: list[Path]) -> bool:
    rel = token.rstrip("/")
    for base in (*FIXED_ROOTS, *bases):
        p = base / rel
        if p.is_dir() if token.endswith("/") else p.is_file():
            return True
    return False


def _dotted_exists(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                try:  # a submodule not imported by its package
                    obj = importlib.import_module(f"{getattr(obj, '__name__', '')}.{attr}")
                    continue
                except ImportError:
                    return False
            obj = getattr(obj, attr)
        return True
    return False


def unresolved_names(doc: str) -> list[str]:
    """``line: token`` for every name of ``doc`` that names nothing in the repository."""
    missing: list[str] = []
    heading_bases: list[Path] = []
    in_code = False
    for n, line in enumerate(doc.splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if line.startswith("#"):
            heading_bases = _dirs_named(line)
            continue
        row_bases: list[Path] = []
        if line.startswith("|"):
            cells = line.split("|")
            row_bases = _dirs_named(cells[1], tuple(heading_bases)) if len(cells) > 2 else []
        line_dirs: list[Path] = []  # folders named earlier on the line: `replay/` ... `plan.py`
        for token in re.findall(r"`([^`\s]+)`", line):
            if token.startswith(("../", "http", "/", "~")) or "*" in token:
                continue
            bases = heading_bases + row_bases + line_dirs
            if (PATH_TOKEN.match(token) and "/" in token) or token.endswith((".py", ".c", ".h")):
                if not _resolves(token, bases):
                    missing.append(f"{n}: {token}")
                elif token.endswith("/"):
                    line_dirs += _dirs_named(f"`{token}`", tuple(bases))
            elif DOTTED.match(token) and not _dotted_exists(token):
                missing.append(f"{n}: {token}")
    return missing


def test_every_module_the_architecture_page_names_exists() -> None:
    assert unresolved_names(DOC.read_text(encoding="utf-8")) == []


def test_the_check_catches_a_name_that_is_gone() -> None:
    doc = (
        "### Inside `catalog/`\n| `build/` | `driver.py`, `no_such_module.py` |\n"
        "`kafka_archive.catalog.no_such` and `replay/not_here.py` and `segment_lib.errors`\n"
    )
    assert unresolved_names(doc) == [
        "2: no_such_module.py",
        "3: kafka_archive.catalog.no_such",
        "3: replay/not_here.py",
    ]
