"""The CRC-32C of segment_lib's Python code paths: :func:`crc32c` (``data`` -> the checksum
as an unsigned 32-bit int, Kafka's batch CRC).

It is the compiled one of :mod:`segment_lib._speedups` when that uses CPU instructions (its
``CRC32C_IMPL`` is not ``"table"``), else the ``crc32c`` package's (which may use ARMv8
instructions where ours has only its table). Both give identical results
(tests/test_scan_speedups.py compares every implementation with a reference).

Why not always the package: importing it costs every process that reads a batch 6 ms or more
(its ``__init__`` imports its command line's ``argparse`` and looks its own version up among
the installed distributions; more where nothing imported ``importlib.metadata`` yet), paid by
every ``kafka-archive catalog offsets`` (docs/performance.md, CLI start-up). So the package is
imported only when it is the one used.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["crc32c"]

crc32c: Callable[[bytes | bytearray | memoryview], int]

try:
    from segment_lib._speedups import CRC32C_IMPL as _IMPL
    from segment_lib._speedups import crc32c as _compiled
except ImportError:  # pragma: no cover - depends on the build (no C compiler)
    _IMPL = "table"

if _IMPL != "table":
    crc32c = _compiled
else:  # pragma: no cover - depends on the CPU and the build
    from crc32c import crc32c as _package

    crc32c = _package
