"""SHA-256 and CRC-32C of local files, with an optional on-disk cache keyed by file identity.

Discovery needs the SHA-256 of every rolled ``.log`` (a segment's identity) on every run, but a
broker holds terabytes that rarely change: hashing them all every ten minutes is out of the
question. :class:`DigestCache` remembers digests in a small SQLite database on the worker,
keyed by ``(path, device, inode, size, mtime_ns)``. A rolled Kafka segment is never modified in
place (compaction writes a new file and renames it over the old one, which changes the inode),
so a matching key means the same bytes. The cache is only a shortcut: every byte that is
uploaded is hashed again by the store and compared with the expected digest, so a stale entry
can at worst make an upload fail loudly, never store wrong bytes.

The database is written in WAL mode with one short transaction per entry; killing the process at
any point leaves it consistent (at worst without the last entries). A cache that cannot be
opened (read-only disk, corruption) is reported once and replaced by no cache.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import crc32c

__all__ = ["DigestCache", "FileDigest", "digest_buffer", "digest_path"]

log = logging.getLogger(__name__)

_BLOCK: Final = 1 << 20
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS digests (
    path TEXT PRIMARY KEY,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    crc32c TEXT NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class FileDigest:
    """Size, SHA-256 (lowercase hex) and CRC-32C (8 lowercase hex digits) of some bytes."""

    size: int
    sha256: str
    crc32c: str


def digest_buffer(data: bytes | memoryview) -> FileDigest:
    """Digest of an in-memory buffer (pure)."""
    view = memoryview(data)
    h = hashlib.sha256()
    crc = 0
    for start in range(0, len(view), _BLOCK):
        chunk = view[start : start + _BLOCK]
        h.update(chunk)
        crc = crc32c.crc32c(chunk, crc)
    return FileDigest(len(view), h.hexdigest(), f"{crc:08x}")


def digest_path(path: str | os.PathLike[str]) -> FileDigest:
    """Read a file once and digest it."""
    h = hashlib.sha256()
    crc = 0
    size = 0
    buf = bytearray(_BLOCK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            chunk = view[:n]
            h.update(chunk)
            crc = crc32c.crc32c(chunk, crc)
            size += n
    return FileDigest(size, h.hexdigest(), f"{crc:08x}")


class DigestCache:
    """Digests of local files, cached in ``<state_dir>/file-digests.sqlite3``.

    ``state_dir=None`` disables caching (every call hashes). Thread-safe.
    """

    def __init__(self, state_dir: str | os.PathLike[str] | None) -> None:
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0
        if state_dir is None:
            return
        path = Path(state_dir) / "file-digests.sqlite3"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, check_same_thread=False, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)
            db.commit()
            self._db = db
        except (OSError, sqlite3.Error) as exc:
            log.warning("digest cache %s unusable (%s); hashing without a cache", path, exc)

    @property
    def enabled(self) -> bool:
        return self._db is not None

    def digest(self, path: str | os.PathLike[str], st: os.stat_result | None = None) -> FileDigest:
        """The digest of ``path``; from the cache when its identity is unchanged."""
        p = os.fspath(path)
        st = st if st is not None else os.stat(p)
        ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if self._db is not None:
            with self._lock:
                row = self._db.execute(
                    "SELECT dev, ino, size, mtime_ns, sha256, crc32c FROM digests WHERE path = ?",
                    (p,),
                ).fetchone()
            if row is not None and tuple(row[:4]) == ident:
                self.hits += 1
                return FileDigest(st.st_size, row[4], row[5])
        self.misses += 1
        digest = digest_path(p)
        after = os.stat(p)
        if (after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns) != ident:
            # The file changed while it was read: do not remember a digest of mixed bytes.
            return digest
        if self._db is not None:
            try:
                with self._lock, self._db:
                    self._db.execute(
                        "INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (p, *ident, digest.sha256, digest.crc32c),
                    )
            except sqlite3.Error as exc:
                log.warning("digest cache write failed (%s); continuing without it", exc)
        return digest

    def close(self) -> None:
        if self._db is not None:
            with self._lock:
                self._db.close()
                self._db = None

    def __enter__(self) -> DigestCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
