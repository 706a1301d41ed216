"""A process-wide cache of object stores: one per URI and options per process.

Executors run many extraction tasks in one Python worker; opening the store once per worker
reuses its connections (an S3 client and its pool) instead of building them per task. The
driver lists manifests through the same cache.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from kafka_archive.store import ObjectStore, open_store

__all__ = ["store_for"]

_STORES: dict[tuple[str, str], ObjectStore] = {}
_STORES_LOCK = threading.Lock()


def store_for(uri: str, options: Mapping[str, Any]) -> ObjectStore:
    """One store per URI/options per process (executors reuse their connections)."""
    key = (uri, json.dumps(dict(options), sort_keys=True, default=str))
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = open_store(uri, **dict(options))
            _STORES[key] = store
        return store
