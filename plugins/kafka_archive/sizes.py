"""Sizes in bytes as people write and read them: ``256MiB``, ``2TB``, ``1048576``.

:func:`parse_bytes` reads a size strictly (the units exactly as documented: ``KiB`` = 1024,
``KB`` = 1000; ``2tb`` or ``1.5GiB`` is refused, never guessed); :func:`format_bytes` writes
one with binary units (``4.1 MiB``). Imported by the settings (every command), so it imports
nothing beyond the standard library.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["format_bytes", "parse_bytes"]

_BYTES_RE: Final = re.compile(r"^(\d+) ?(B|KB|MB|GB|TB|PB|KiB|MiB|GiB|TiB|PiB)?$")
_BYTES_UNIT: Final = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "PiB": 2**50,
}


def _kind(value: object) -> str:
    return "a boolean" if isinstance(value, bool) else f"a {type(value).__name__}"


def parse_bytes(value: object) -> int:
    """``500GiB``, ``2TB``, ``1048576`` (bytes; a string of digits too). Strict: a boolean, a
    float, a fraction or a unit spelt otherwise (``2tb``) is refused (``ValueError``)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{value!r} is {_kind(value)}, not a size (write e.g. 500GiB, 2TB)")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"a size must be positive, not {value}")
        return value
    m = _BYTES_RE.match(value)
    if m is None:
        raise ValueError(
            f"{value!r} is not a size (an integer and one of B, KB, MB, GB, TB, PB, KiB, "
            "MiB, GiB, TiB, PiB, e.g. 500GiB, 2TB, 1048576)"
        )
    n = int(m[1]) * _BYTES_UNIT[m[2] or "B"]
    if n <= 0:
        raise ValueError(f"a size must be positive, not {value!r}")
    return n


def format_bytes(n: int) -> str:
    """``n`` bytes for people: ``512 B``, ``4.1 MiB``, ``1.2 GiB`` (binary units, up to TiB)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
