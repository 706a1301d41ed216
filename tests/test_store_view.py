"""``get_range_view`` (zero-copy ranged reads) against LocalStore and S3Store (moto over HTTP),
and :func:`kafka_archive.store.base.read_view` for wrappers.

The expected bytes are slices of the data the test generated, never read back from the store.
"""

from __future__ import annotations

import gc
import hashlib
import mmap
from pathlib import Path

import pytest
from kafka_archive.store import InvalidRange, LocalStore, ObjectNotFound, ObjectStore
from kafka_archive.store.base import read_view
from support.stores import RangeCountingStore

pytest_plugins = ["support.s3server", "support.stores"]

MiB = 1024 * 1024
SIZE = 3 * MiB + 12345  # not a multiple of a page: the last mapped page is partial


@pytest.fixture(scope="module")
def data() -> bytes:
    return b"".join(hashlib.sha512(i.to_bytes(4, "big")).digest() for i in range(SIZE // 64 + 1))[
        :SIZE
    ]


RANGES = [
    (0, 0),
    (0, 1),
    (4095, 4097),  # across a page
    (0, 512 << 10),  # the smallest mapped range
    (1, (512 << 10) + 1),  # mapped, start not page-aligned
    (123_457, 2 * MiB + 17),
    (mmap.ALLOCATIONGRANULARITY, 2 * MiB),  # aligned start
    (SIZE - 1, SIZE),
    (SIZE - (1 << 20) - 3, SIZE),  # mapped, up to the partial last page
    (0, SIZE),
    (SIZE, SIZE),  # empty at the end
]


def test_view_equals_get_range(store: ObjectStore, data: bytes) -> None:
    store.put_bytes("obj", data)
    for start, end in RANGES:
        view = store.get_range_view("obj", start, end)
        assert isinstance(view, memoryview)
        assert view.readonly
        assert (view.ndim, view.itemsize, view.format) == (1, 1, "B")
        assert len(view) == end - start
        assert view == data[start:end], (start, end)
        assert view.tobytes() == store.get_range("obj", start, end)
        assert read_view(store, "obj", start, end) == data[start:end]


def test_view_is_read_only(store: ObjectStore, data: bytes) -> None:
    store.put_bytes("obj", data)
    for start, end in ((0, 10), (0, SIZE)):
        view = store.get_range_view("obj", start, end)
        with pytest.raises(TypeError):
            view[0] = 0


def test_view_bounds_and_missing(store: ObjectStore, data: bytes) -> None:
    store.put_bytes("obj", data)
    for start, end in [(0, SIZE + 1), (SIZE, SIZE + 1), (SIZE + 5, SIZE + 600_000), (1, SIZE + 1)]:
        with pytest.raises(InvalidRange):
            store.get_range_view("obj", start, end)
    for start, end in [(-1, 3), (10, 5), (0, -1)]:
        with pytest.raises(InvalidRange):
            store.get_range_view("obj", start, end)
    with pytest.raises(InvalidRange):
        store.get_range_view("obj", 0, 1.5)  # type: ignore[arg-type]
    for start, end in [(0, 0), (0, 1), (0, 1 << 20)]:
        with pytest.raises(ObjectNotFound):
            store.get_range_view("missing", start, end)


def test_local_view_maps_large_ranges(tmp_path: Path, data: bytes) -> None:
    store = LocalStore(tmp_path / "store")
    store.put_bytes("obj", data)
    big = store.get_range_view("obj", 1, SIZE)
    assert isinstance(big.obj, mmap.mmap)  # no copy: the file's pages
    small = store.get_range_view("obj", 1, 1000)
    assert isinstance(small.obj, bytes)


def test_local_view_outlives_replace_and_delete(tmp_path: Path, data: bytes) -> None:
    """Objects are replaced by renaming a new file over the key and deleted by unlinking, so a
    view keeps showing the bytes it was taken from (never SIGBUS, never the new bytes)."""
    store = LocalStore(tmp_path / "store")
    store.put_bytes("obj", data)
    view = store.get_range_view("obj", 100, SIZE)
    tail = view[5:]  # a slice keeps the mapping alive on its own
    del view
    gc.collect()
    other = bytes(b ^ 0xFF for b in data[:4096]) * (SIZE // 4096 + 1)
    store.put_bytes("obj", other[:SIZE])
    assert tail == data[105:SIZE]
    assert store.get_range_view("obj", 100, SIZE) == other[100:SIZE]
    store.delete("obj")
    assert tail == data[105:SIZE]
    with pytest.raises(ObjectNotFound):
        store.get_range_view("obj", 100, SIZE)


def test_read_view_respects_a_wrappers_get_range(tmp_path: Path, data: bytes) -> None:
    inner = LocalStore(tmp_path / "store")
    inner.put_bytes("obj", data)
    wrapped = RangeCountingStore(inner)
    view = read_view(wrapped, "obj", 7, SIZE)  # type: ignore[arg-type]
    assert view == data[7:]
    assert wrapped.ranged_reads == 1  # through the wrapper, not around it
    direct = read_view(inner, "obj", 7, SIZE)
    assert isinstance(direct.obj, mmap.mmap)
    assert direct == data[7:]
