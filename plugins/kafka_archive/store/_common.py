"""Behaviour shared by every backend, written once against the :class:`ObjectStore` protocol."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

from kafka_archive.store._digest import READ_BLOCK, digest_bytes, digest_file
from kafka_archive.store.base import (
    ObjectStore,
    Source,
    StoredObject,
    check_sha256,
    validate_key,
)
from kafka_archive.store.errors import IntegrityError, InvalidRange

__all__ = ["check_range", "put_if_absent_impl", "sha256_of_stored"]


def sha256_of_stored(store: ObjectStore, key: str) -> str:
    """Hash an existing object by streaming it (for objects without a recorded SHA-256)."""
    h = hashlib.sha256()
    with store.open_stream(key) as stream:
        while chunk := stream.read(READ_BLOCK):
            h.update(chunk)
    return h.hexdigest()


def put_if_absent_impl(
    store: ObjectStore,
    key: str,
    source: Source,
    *,
    sha256: str | None,
    metadata: Mapping[str, str] | None,
) -> tuple[StoredObject, bool]:
    """``put_if_absent`` for any store: head, compare SHA-256, write only when absent.

    This is check-then-write, not a lock: it is correct for content-addressed keys, where any
    racing writer writes the same bytes. When the existing object has no recorded SHA-256 it is
    streamed and hashed rather than trusted or overwritten.
    """
    key = validate_key(key)
    expected = check_sha256(sha256)
    existing = store.head(key)
    if existing is None:
        if isinstance(source, bytes | bytearray | memoryview):
            obj = store.put_bytes(key, bytes(source), sha256=expected, metadata=metadata)
        else:
            obj = store.put_file(key, source, sha256=expected, metadata=metadata)
        return obj, True
    if expected is not None:
        want = expected
    elif isinstance(source, bytes | bytearray | memoryview):
        want = digest_bytes(source).sha256_hex
    else:
        want = digest_file(os.fspath(source)).sha256_hex
    have = existing.sha256 if existing.sha256 is not None else sha256_of_stored(store, key)
    if have != want:
        raise IntegrityError(
            f"key already holds different content (stored sha256 {have}, new sha256 {want})",
            uri=store.uri,
            key=key,
            hint=(
                "Content-addressed keys must never change: find out which writer produced the "
                "existing object before deleting or overwriting it"
            ),
        )
    return existing, False


def check_range(start: int, end_exclusive: int, *, uri: str, key: str) -> None:
    """Validate the arguments of ``get_range`` (``0 <= start <= end_exclusive``, ints)."""
    for name, value in (("start", start), ("end_exclusive", end_exclusive)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidRange(
                f"{name} must be an int, got {type(value).__name__}", uri=uri, key=key
            )
    if start < 0 or end_exclusive < start:
        raise InvalidRange(
            f"invalid range [{start}, {end_exclusive}): need 0 <= start <= end_exclusive",
            uri=uri,
            key=key,
        )
