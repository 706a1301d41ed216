"""Object storage for the archive: a local directory or S3 (and S3-compatible stores).

Use :func:`open_store` with a URI and program against the :class:`ObjectStore` protocol; see
:mod:`kafka_archive.store.base` for the full contract and :mod:`kafka_archive.store.errors` for
the failures it reports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_archive.store.base import ObjectStore, StoredObject, validate_key, validate_prefix
from kafka_archive.store.errors import (
    AccessDenied,
    IntegrityError,
    InvalidKey,
    InvalidRange,
    InvalidRequest,
    ObjectNotFound,
    StoreConfigError,
    StoreError,
    StoreUnavailable,
)
from kafka_archive.store.factory import open_store
from kafka_archive.store.local import LocalStore

if TYPE_CHECKING:
    from kafka_archive.store.s3 import S3Options, S3Store

__all__ = [
    "AccessDenied",
    "IntegrityError",
    "InvalidKey",
    "InvalidRange",
    "InvalidRequest",
    "LocalStore",
    "ObjectNotFound",
    "ObjectStore",
    "S3Options",
    "S3Store",
    "StoreConfigError",
    "StoreError",
    "StoreUnavailable",
    "StoredObject",
    "open_store",
    "validate_key",
    "validate_prefix",
]


def __getattr__(name: str) -> Any:
    # The S3 names are re-exported lazily: importing the store package (every catalog query
    # does) must not import boto3 unless an s3:// store is really used.
    if name in ("S3Options", "S3Store"):
        from kafka_archive.store import s3

        return getattr(s3, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
