"""The object-store contract shared by every backend (local directory, S3 and S3-compatible).

Keys are '/'-separated *relative* paths (``cluster/topic-0/00000000000000000000.log``), validated
identically by every backend (:func:`validate_key`) so that a key that works locally also works
on S3 and can never escape a local root. A store is rooted at a URI (``file:///abs/dir`` or
``s3://bucket/prefix``); keys are relative to that root and :attr:`StoredObject.key` is always
the relative key, never the bucket-level name.

Write contract (``put_file``, ``put_bytes``, ``put_if_absent``):
    * The SHA-256 of the source is computed by the store. If the caller passes ``sha256`` and it
      differs, :class:`~kafka_archive.store.errors.IntegrityError` is raised and nothing becomes
      visible under the key.
    * After the write the stored object is checked again (local: the written bytes are re-read
      before the atomic rename; S3: the store's own SHA-256 flexible checksum and size are
      compared with the source's). On mismatch the object is removed and ``IntegrityError``
      raised.
    * Readers never see a partial object under the final key (local: temp file + fsync +
      ``os.replace``; S3: single PUT or multipart upload, which is only visible once completed).
    * The SHA-256 is recorded with the object (S3 user metadata ``sha256``; locally a sidecar
      file) and reported by :meth:`ObjectStore.head` and used to verify whole-object reads.

Read contract: ``get_bytes`` and ``open_stream`` verify the whole object against its recorded
SHA-256 when one is known (``IntegrityError`` otherwise); ``get_range`` returns exactly the
requested bytes or raises ``InvalidRange``; it cannot be verified against a whole-object hash,
so callers rely on the format's own checksums (Kafka batch CRC-32C) for ranged reads.

``get_range_view`` is ``get_range`` without the copy where a backend can avoid it: a read-only
``memoryview`` of exactly the bytes ``[start, end_exclusive)``, valid for as long as the view
(or any slice of it) is alive, with the same argument checks and errors as ``get_range``.
The local store maps the object's file (see :meth:`LocalStore.get_range_view
<kafka_archive.store.local.LocalStore.get_range_view>` for why that is safe for archived
objects); other backends return a view of ``get_range``'s bytes. Callers holding an arbitrary
store-like object (a test double or wrapper that overrides only ``get_range``) should use
:func:`read_view`, which takes the view only from a class that implements it.

``list`` yields objects in ascending key order (S3's UTF-8 byte order) and does not report
``sha256`` (S3 listings do not carry metadata): use ``head`` for that. ``delete`` is idempotent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO, Protocol, runtime_checkable

from kafka_archive.store.errors import InvalidKey, InvalidRequest

__all__ = [
    "META_SHA256",
    "RESERVED_SEGMENT_PREFIX",
    "ObjectStore",
    "Source",
    "StoredObject",
    "check_metadata",
    "check_sha256",
    "read_view",
    "validate_key",
    "validate_prefix",
]

#: User-metadata name under which the object's SHA-256 (lowercase hex) is recorded.
META_SHA256 = "sha256"

#: Key segments starting with this are reserved for the stores' own bookkeeping (local temp
#: files and sidecars) and rejected in user keys, so they can never collide with objects.
RESERVED_SEGMENT_PREFIX = ".ka-"

#: S3 limits keys to 1024 bytes of UTF-8; apply the same limit everywhere.
MAX_KEY_BYTES = 1024

#: What ``put_if_absent`` accepts: raw bytes or a path to a local file.
Source = bytes | str | os.PathLike[str]

_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")
# S3 sends user metadata as HTTP headers: names must be header-safe tokens and values ASCII.
_META_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class StoredObject:
    """What a store knows about one object.

    Attributes:
        key: the key relative to the store root.
        size: length in bytes.
        sha256: lowercase hex SHA-256 of the content, or ``None`` when unknown (``list`` never
            reports it; objects written by other tools may not have it).
        etag: S3 ETag without quotes; locally a fingerprint of (inode, mtime, size).
        version_id: S3 version id on versioned buckets, else ``None``.
        last_modified: modification time (timezone-aware UTC), if known.
        metadata: user metadata given at write time (without the reserved ``sha256`` entry).
    """

    key: str
    size: int
    sha256: str | None = None
    etag: str | None = None
    version_id: str | None = None
    last_modified: datetime | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class ObjectStore(Protocol):
    """A flat namespace of immutable-once-written objects addressed by relative keys."""

    @property
    def uri(self) -> str:
        """The store root as a URI: ``file:///abs/dir`` or ``s3://bucket[/prefix]``."""
        ...

    def put_file(
        self,
        key: str,
        local_path: str | os.PathLike[str],
        *,
        sha256: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> StoredObject:
        """Upload a local file under ``key`` (replacing any object there), verified end to end."""
        ...

    def put_bytes(
        self,
        key: str,
        data: bytes,
        *,
        sha256: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> StoredObject:
        """Store ``data`` under ``key``; meant for small objects such as manifests."""
        ...

    def put_if_absent(
        self,
        key: str,
        source: Source,
        *,
        sha256: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> tuple[StoredObject, bool]:
        """Write ``source`` unless ``key`` already holds the same content.

        Returns ``(object, created)``. If the key exists with a *different* SHA-256,
        ``IntegrityError`` is raised and the existing object is left alone. Meant for
        content-addressed keys: two writers racing on the same key write identical bytes, so
        the data is safe either way; the local and S3 stores also make the write atomic (of
        writers racing on an absent key exactly one gets ``created=True``), so reports that
        count created objects add up across concurrent writers.
        """
        ...

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds an object."""
        ...

    def head(self, key: str) -> StoredObject | None:
        """Metadata of ``key`` (with ``sha256`` when recorded), or ``None`` if absent."""
        ...

    def get_bytes(self, key: str) -> bytes:
        """The whole object, verified against its recorded SHA-256 when known."""
        ...

    def get_range(self, key: str, start: int, end_exclusive: int) -> bytes:
        """Exactly the bytes ``[start, end_exclusive)`` of the object."""
        ...

    def get_range_view(self, key: str, start: int, end_exclusive: int) -> memoryview:
        """The bytes ``[start, end_exclusive)`` as a read-only view, without a copy where the
        backend can avoid one; valid while the view lives. Same checks and errors as
        :meth:`get_range`. This default (for explicit subclasses) wraps :meth:`get_range`."""
        return memoryview(self.get_range(key, start, end_exclusive))

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        """Objects whose key starts with ``prefix`` (a plain string prefix), in key order."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key``; succeeds if it is already absent."""
        ...

    def open_stream(self, key: str) -> BinaryIO:
        """A binary reader over the object; verifies the SHA-256 when it reaches the end."""
        ...

    def close(self) -> None:
        """Release connections and thread pools; the store must not be used afterwards."""
        ...


def read_view(store: ObjectStore, key: str, start: int, end_exclusive: int) -> memoryview:
    """``store.get_range_view(key, start, end_exclusive)`` when the store's *class* implements
    it, else a view of ``store.get_range(...)``.

    Why the class: wrappers (counting, fault-injecting, recording stores) often override
    ``get_range`` and pass every other attribute through to the store they wrap; taking
    ``get_range_view`` through such a pass-through would silently bypass their ``get_range``.
    """
    if callable(getattr(type(store), "get_range_view", None)):
        return store.get_range_view(key, start, end_exclusive)
    return memoryview(store.get_range(key, start, end_exclusive))


def validate_key(key: str) -> str:
    """Return ``key`` unchanged if it is a safe relative key, else raise :class:`InvalidKey`.

    Rules (the same for every backend): a non-empty ``str`` of at most 1024 UTF-8 bytes; no
    leading or trailing ``/``; no empty, ``.`` or ``..`` segments; no backslash or control
    characters; no segment starting with the reserved ``.ka-`` prefix.
    """
    if not isinstance(key, str):
        raise InvalidKey(f"key must be a str, got {type(key).__name__}", key=repr(key))
    problem = _key_problem(key, allow_trailing_slash=False)
    if problem is not None:
        raise InvalidKey(problem, key=key)
    return key


def validate_prefix(prefix: str) -> str:
    """Validate a listing prefix: like a key, but may be empty and may end with ``/``."""
    if not isinstance(prefix, str):
        raise InvalidKey(f"prefix must be a str, got {type(prefix).__name__}", key=repr(prefix))
    if prefix == "":
        return prefix
    problem = _key_problem(prefix, allow_trailing_slash=True)
    if problem is not None:
        raise InvalidKey(f"invalid prefix: {problem}", key=prefix)
    return prefix


def _key_problem(key: str, *, allow_trailing_slash: bool) -> str | None:
    if key == "":
        return "key is empty"
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        return f"key is longer than {MAX_KEY_BYTES} UTF-8 bytes"
    if key.startswith("/"):
        return "key is absolute (starts with '/')"
    if "\\" in key:
        return "key contains a backslash"
    if _CONTROL_CHARS.search(key):
        return "key contains a control character"
    segments = key.split("/")
    if allow_trailing_slash and segments[-1] == "":
        segments = segments[:-1]
    for segment in segments:
        if segment == "":
            return "key has an empty segment ('//' or a trailing '/')"
        if segment in (".", ".."):
            return f"key has a {segment!r} segment"
        if segment.startswith(RESERVED_SEGMENT_PREFIX):
            return f"key segments starting with {RESERVED_SEGMENT_PREFIX!r} are reserved"
    return None


def check_sha256(sha256: str | None) -> str | None:
    """Normalise an expected SHA-256 to lowercase hex; raise ``InvalidRequest`` if malformed."""
    if sha256 is None:
        return None
    if not isinstance(sha256, str) or not _SHA256_HEX.fullmatch(sha256):
        raise InvalidRequest(
            "sha256 must be 64 hexadecimal characters",
            hint="Pass hashlib.sha256(data).hexdigest()",
        )
    return sha256.lower()


def check_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """Validate user metadata; return a plain dict copy.

    Names must be lowercase ``[a-z0-9][a-z0-9_-]*`` and values printable ASCII, because S3
    transports them as HTTP headers (and lowercases names). ``sha256`` is reserved.
    """
    if metadata is None:
        return {}
    out: dict[str, str] = {}
    for name, value in metadata.items():
        if not isinstance(name, str) or not _META_NAME.fullmatch(name):
            raise InvalidRequest(
                f"metadata name {name!r} is not allowed",
                hint="Use lowercase letters, digits, '-' and '_' (S3 sends metadata as headers)",
            )
        if name == META_SHA256:
            raise InvalidRequest(
                f"metadata name {META_SHA256!r} is reserved",
                hint="Pass the checksum as the sha256= argument instead",
            )
        if not isinstance(value, str) or not value.isascii() or not value.isprintable():
            raise InvalidRequest(
                f"metadata value for {name!r} must be printable ASCII",
                hint="Encode other values (e.g. base64 or percent-encoding) before storing",
            )
        out[name] = value
    return out
