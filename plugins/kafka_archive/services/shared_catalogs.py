"""Catalogs a long-running server keeps open across requests, one per catalog URL (the
on-call API, :mod:`kafka_archive.ui.catalog_routes`).

Opening a catalog per request costs a new SQLAlchemy engine (its first connection, the
schema-version check) and, because SQLAlchemy caches compiled statements per engine, the
compilation of every statement again: on the benchmark catalog that was half the CPU time of
the page's first answer (``benchmarks/bench_ui.py``; docs/performance.md, "On-call page").
Each request still gets its own :class:`~kafka_archive.services.catalog_queries.CatalogQueryService`
and its own sessions; only the engine (thread-safe, with its connection pool) is shared.

A SQLite catalog file that is removed or replaced (a new demo run writes a new file at the
same path) is noticed on the next request by the file's identity (device and inode) and opened
again, through :func:`~kafka_archive.catalog.db.open_catalog`, with its usual errors (e.g.
"no catalog at PATH") when it is gone.
"""

from __future__ import annotations

import os
import threading

from sqlalchemy.engine import make_url

from kafka_archive.catalog.db import Catalog, normalize_url, open_catalog

__all__ = ["SharedCatalogs"]


class _Borrowed(Catalog):
    """A shared catalog handed to one request: closing it leaves the engine to its owner."""

    __slots__ = ()

    def close(self) -> None:
        return None


#: the identity of a server database's catalog (nothing on this machine can change under it)
_SERVER = (-1, -1)


def _identity(url: str) -> tuple[int, int] | None:
    """(device, inode) of a SQLite catalog file, :data:`_SERVER` for a server database, and
    ``None`` for a SQLite catalog with no file to identify (gone, or in memory): never kept."""
    # (A replaced file cannot take the old one's inode while a kept engine still holds the old
    # one open, so a new inode always means a new file.)
    parsed = make_url(normalize_url(url))
    if parsed.get_backend_name() != "sqlite":
        return _SERVER
    try:
        st = os.stat(parsed.database or "")
    except OSError:
        return None
    return st.st_dev, st.st_ino


class SharedCatalogs:
    """Open catalogs by URL, for the requests of one app (thread-safe)."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[Catalog, tuple[int, int] | None]] = {}
        self._lock = threading.Lock()

    def get(self, url: str) -> Catalog:
        """The catalog at ``url`` for one request (its ``close`` does nothing), opened on the
        first request or when its SQLite file changed (see the module docstring).

        Raises what :func:`~kafka_archive.catalog.db.open_catalog` raises."""
        ident = _identity(url)
        with self._lock:
            hit = self._open.pop(url, None)
            if hit is not None and hit[1] == ident and ident is not None:
                self._open[url] = hit
                cat = hit[0]
            else:
                if hit is not None:
                    hit[0].close()  # requests still using it finish on their connections
                cat = open_catalog(url)
                if ident is None:
                    return cat  # not kept: the request's service closes it
                self._open[url] = (cat, ident)
        return _Borrowed(cat.engine, cat.url)

    def close(self) -> None:
        """Close every kept catalog (their engines' pooled connections)."""
        with self._lock:
            for cat, _ident in self._open.values():
                cat.close()
            self._open.clear()
