"""S3Store.put_if_absent is atomic: its write carries ``If-None-Match: *``, so of writers racing on
one absent key exactly one gets ``created=True`` (concurrent archivers' reports count on it; see
tests/test_store_local_exclusive.py for the local store). Runs against moto's S3 server, which
implements conditional writes for PutObject and CompleteMultipartUpload like S3 does."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.store import IntegrityError, StoredObject
from kafka_archive.store.s3 import S3Store

pytest_plugins = ["support.s3server"]


def _prefix(store: S3Store) -> str:
    return store.uri.split("/", 3)[3]


def _looked_too_early(store: S3Store) -> S3Store:
    """Make ``store`` answer "absent" to its first head of each key (the object landed after
    it looked), as a writer that lost the race sees it."""
    asked: set[str] = set()
    real_head = store.head

    def head(key: str) -> StoredObject | None:
        if key not in asked:
            asked.add(key)
            return None
        return real_head(key)

    store.head = head  # type: ignore[method-assign]
    return store


@pytest.mark.parametrize("multipart", [False, True])
def test_a_writer_that_looked_too_early_does_not_create(
    make_s3_store: Callable[..., S3Store], tmp_path: Path, multipart: bool
) -> None:
    options: dict[str, Any] = (
        {"multipart_threshold": 5 << 20, "multipart_chunksize": 5 << 20} if multipart else {}
    )
    data = bytes(range(256)) * ((6 << 20) // 256 if multipart else 40)
    sha = hashlib.sha256(data).hexdigest()
    first_store = make_s3_store(**options)
    options["prefix"] = _prefix(first_store)  # the same keys (each made store has its own)
    first, created = first_store.put_if_absent("k/a.log", data)
    assert created
    source = tmp_path / "a.log"
    source.write_bytes(data)
    late = _looked_too_early(make_s3_store(**options))
    obj, created = late.put_if_absent("k/a.log", source, sha256=sha)
    assert not created and obj.sha256 == sha
    # the first writer's object is the one stored (same ETag: not overwritten)
    assert first_store.head("k/a.log") == first
    # different bytes under the same key are still refused, and change nothing
    with pytest.raises(IntegrityError):
        _looked_too_early(make_s3_store(**options)).put_if_absent("k/a.log", b"other")
    assert first_store.head("k/a.log") == first


def _race(stores: list[S3Store], key: str) -> list[bool]:
    results: list[bool] = []
    barrier = threading.Barrier(len(stores))

    def put(store: S3Store) -> None:
        barrier.wait()
        results.append(store.put_if_absent(key, b"x" * 4096)[1])

    threads = [threading.Thread(target=put, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_racing_writers_create_exactly_once(make_s3_store: Callable[..., S3Store]) -> None:
    first = make_s3_store()
    stores = [first, *(make_s3_store(prefix=_prefix(first)) for _ in range(3))]
    for i in range(8):
        assert sorted(_race(stores, f"k/{i}.log")) == [False, False, False, True]
