"""Read the documentation comments of the chart's values.yaml.

Contract: every mapping key of values.yaml that is not inside a list is preceded by a comment
block; a block that starts with ``# --`` is the key's description (helm-docs convention), other
blocks are free notes and do not count. The description is the comment text up to the first
line indented as example code (``#   ...``). ``key_descriptions`` returns them by dotted path
(``objectStore.encryption.type``) and raises ``ValueError`` naming every key without one.

Only the block style values.yaml uses is understood: ``key: value`` and ``key:`` lines, list
items starting with ``-`` (keys inside them are skipped: list items are described by the
schema), and flow collections on one line.
"""

from __future__ import annotations

import re
from pathlib import Path

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.\-/]+):(?:\s|$)")
_ITEM = re.compile(r"^(?P<indent> *)- ")
_CONTINUATION = re.compile(r"^ *[{\[\"']")


def key_descriptions(text: str) -> dict[str, str]:
    """Dotted key path -> description, for every mapping key outside lists."""
    found: dict[str, str] = {}
    missing: list[str] = []
    stack: list[tuple[int, str]] = []  # (indent, key) of the enclosing mapping keys
    list_indent: int | None = None  # inside a list item whose dash sits at this indent
    comment: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            comment = []
            continue
        if stripped.startswith("#"):
            comment.append(stripped)
            continue
        indent = len(line) - len(line.lstrip(" "))
        if list_indent is not None and indent > list_indent:
            comment = []
            continue  # a continuation of a list item
        list_indent = None
        item = _ITEM.match(line)
        if item:
            list_indent = indent
            comment = []
            continue
        if _CONTINUATION.match(line):
            comment = []
            continue  # a flow value continued from the key line above
        m = _KEY.match(line)
        if not m:
            raise ValueError(f"values.yaml:{lineno}: cannot parse {line!r}")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [m["key"]])
        description = _description(comment)
        if description:
            found[path] = description
        else:
            missing.append(f"{path} (line {lineno})")
        stack.append((indent, m["key"]))
        comment = []
    if missing:
        raise ValueError("values.yaml keys without a '# --' description: " + ", ".join(missing))
    return found


def _description(comment: list[str]) -> str:
    start = next((i for i, c in enumerate(comment) if c.startswith("# --")), None)
    if start is None:
        return ""
    words = [comment[start][4:].strip()]
    for c in comment[start + 1 :]:
        body = c[1:]
        if body.startswith("   "):  # example code
            break
        words.append(body.strip())
    return " ".join(w for w in words if w).strip()


def read_key_descriptions(values_path: Path) -> dict[str, str]:
    return key_descriptions(values_path.read_text(encoding="utf-8"))
