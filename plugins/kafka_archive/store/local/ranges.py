"""Ranged reads of a local store's files: copied with ``pread``, or mapped with ``mmap``.

Contract: :func:`pread_exact` returns exactly the bytes ``[start, end_exclusive)`` of an open
file, raising :class:`~kafka_archive.store.errors.InvalidRange` if the file ends first;
:func:`map_readonly` maps ``length`` bytes from ``start`` read-only and returns a view of just
them (no copy), alive as long as the view or a slice of it. Ranges shorter than
:data:`MAP_MIN_BYTES` are cheaper to copy than to map. Both let :class:`OSError` through for
the caller to map; why mapping an object of the store cannot end in SIGBUS is in
:mod:`kafka_archive.store.local`.
"""

from __future__ import annotations

import mmap
import os

from kafka_archive.store.errors import InvalidRange

__all__ = ["MAP_MIN_BYTES", "map_readonly", "pread_exact"]

#: ranges shorter than this are copied with pread by get_range_view, longer ones mapped.
#: Measured (page-cached file, the range then CRC-32C'd): 64 KiB pread 8.5 us vs map 13.5 us,
#: 256 KiB 24 vs 27 us, 1 MiB 110 vs 64 us, 8 MiB 1.8 ms vs 0.44 ms
MAP_MIN_BYTES = 512 << 10


def pread_exact(fd: int, start: int, end_exclusive: int, *, uri: str, key: str) -> bytes:
    """The bytes ``[start, end_exclusive)`` of the file open as ``fd``."""
    chunks: list[bytes] = []
    pos, remaining = start, end_exclusive - start
    while remaining:
        chunk = os.pread(fd, remaining, pos)
        if not chunk:  # file shrank under us
            raise InvalidRange(
                f"object ended at byte {pos} while reading [{start}, {end_exclusive})",
                uri=uri,
                key=key,
            )
        chunks.append(chunk)
        pos += len(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def map_readonly(fd: int, start: int, length: int) -> memoryview:
    """``length`` bytes of the file open as ``fd`` from ``start``, mapped read-only."""
    # the mapping must start at a multiple of the allocation granularity
    lead = start % mmap.ALLOCATIONGRANULARITY
    mapped = mmap.mmap(fd, lead + length, access=mmap.ACCESS_READ, offset=start - lead)
    # the mapping outlives the file descriptor; a slice keeps the mmap object (and so the
    # mapping) alive through the view's buffer, and nothing ever closes it explicitly
    view = memoryview(mapped)
    return view[lead:] if lead else view
