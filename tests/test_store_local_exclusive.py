"""LocalStore.put_if_absent is atomic: of writers racing on one absent key exactly one gets
``created=True`` (the archiver's reports count on it, tests/archive/test_archive_concurrent.py)."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest
from kafka_archive.store import IntegrityError, LocalStore, StoredObject


class _LookedTooEarly(LocalStore):
    """Answers "absent" to its first head of each key: the object landed after it looked."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, fsync=False)
        self._asked: set[str] = set()

    def head(self, key: str) -> StoredObject | None:
        if key not in self._asked:
            self._asked.add(key)
            return None
        return super().head(key)


@pytest.mark.parametrize("as_file", [False, True])
def test_a_writer_that_looked_too_early_does_not_create(tmp_path: Path, as_file: bool) -> None:
    data = b"segment bytes" * 100
    sha = hashlib.sha256(data).hexdigest()
    first, created = LocalStore(tmp_path / "s", fsync=False).put_if_absent("k/a.log", data)
    assert created
    source: bytes | Path = data
    if as_file:
        source = tmp_path / "a.log"
        source.write_bytes(data)
    late = _LookedTooEarly(tmp_path / "s")
    obj, created = late.put_if_absent("k/a.log", source, sha256=sha)
    assert not created and obj.sha256 == sha
    # the first writer's object and sidecar are untouched, no temp file is left behind
    assert late.head("k/a.log") == first
    assert sorted(p.name for p in (tmp_path / "s" / "k").iterdir() if "tmp" in p.name) == []
    # different bytes under the same key are still refused
    with pytest.raises(IntegrityError):
        _LookedTooEarly(tmp_path / "s").put_if_absent("k/a.log", b"other")


def _race(root: Path, key: str, writers: int) -> list[bool]:
    results: list[bool] = []
    barrier = threading.Barrier(writers)

    def put() -> None:
        barrier.wait()
        results.append(LocalStore(root, fsync=False).put_if_absent(key, b"x" * 4096)[1])

    threads = [threading.Thread(target=put) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_racing_writers_create_exactly_once(tmp_path: Path) -> None:
    for i in range(20):
        assert sorted(_race(tmp_path / "s", f"k/{i}.log", 4)) == [False, False, False, True]
