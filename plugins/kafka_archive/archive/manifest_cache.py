"""A worker-local cache of manifest bytes, so planning does not GET the same manifest every run.

Manifests are immutable once written (see :mod:`kafka_archive.archive.manifest`), so their
bytes can be cached forever under ``(store URI, key)``. The cache lives in
``<state_dir>/manifests.sqlite3``; ``state_dir=None`` keeps it in memory for one run only.
Bytes read from the cache are parsed and validated exactly like bytes from the store.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path

from kafka_archive.archive.manifest import SegmentManifest, parse_manifest
from kafka_archive.store import ObjectStore

__all__ = ["ManifestCache"]

log = logging.getLogger(__name__)


class ManifestCache:
    """Fetch manifests through an in-memory map and an optional SQLite file."""

    def __init__(self, state_dir: str | os.PathLike[str] | None = None) -> None:
        self._lock = threading.Lock()
        self._memory: dict[tuple[str, str], SegmentManifest] = {}
        self._db: sqlite3.Connection | None = None
        self.fetched = 0
        if state_dir is None:
            return
        path = Path(state_dir) / "manifests.sqlite3"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, check_same_thread=False, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS manifests (uri TEXT NOT NULL, key TEXT NOT NULL, "
                "data BLOB NOT NULL, PRIMARY KEY (uri, key))"
            )
            db.commit()
            self._db = db
        except (OSError, sqlite3.Error) as exc:
            log.warning("manifest cache %s unusable (%s); continuing without it", path, exc)

    def get(self, store: ObjectStore, key: str) -> SegmentManifest:
        """The manifest at ``key`` (raises :class:`~kafka_archive.archive.manifest.InvalidManifest`
        or a store error)."""
        ident = (store.uri, key)
        with self._lock:
            cached = self._memory.get(ident)
        if cached is not None:
            return cached
        data: bytes | None = None
        if self._db is not None:
            with self._lock:
                row = self._db.execute(
                    "SELECT data FROM manifests WHERE uri = ? AND key = ?", ident
                ).fetchone()
            data = bytes(row[0]) if row is not None else None
        from_store = data is None
        if data is None:
            data = store.get_bytes(key)
            self.fetched += 1
        manifest = parse_manifest(data, key=key)
        with self._lock:
            self._memory[ident] = manifest
            if from_store and self._db is not None:
                try:
                    with self._db:
                        self._db.execute(
                            "INSERT OR REPLACE INTO manifests VALUES (?, ?, ?)", (*ident, data)
                        )
                except sqlite3.Error as exc:
                    log.warning("manifest cache write failed (%s)", exc)
        return manifest

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
