"""Checksums shared by the stores: whole-object SHA-256 and S3's composite multipart SHA-256.

S3 flexible checksums (``ChecksumAlgorithm='SHA256'``) give, for a single PUT, the SHA-256 of
the whole object. For a multipart upload the stored value is *composite*: the SHA-256 of the
concatenated raw SHA-256 digests of the parts, reported as ``<base64>-<part count>`` (see the
AWS S3 user guide, "Checking object integrity", "Using part-level checksums for multipart
uploads"). To compare with the store we therefore hash the source once, computing the
whole-object digest and the per-part digests at the exact part size the transfer manager will
use, in the same pass.

:func:`digest_bytes` is pure; :func:`digest_file` is its file-reading sibling.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from kafka_archive.store.errors import IntegrityError

__all__ = [
    "READ_BLOCK",
    "Hasher",
    "SourceDigest",
    "VerifyingReader",
    "buffered",
    "digest_bytes",
    "digest_file",
]

#: Block size for hashing and copying files: large enough to amortise syscalls, small enough
#: to keep memory flat.
READ_BLOCK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SourceDigest:
    """Digests of one upload source.

    Attributes:
        size: bytes hashed.
        sha256: raw SHA-256 of all bytes.
        part_size: the multipart part size the per-part digests were cut at, or ``None``.
        part_sha256: raw SHA-256 of each part (empty when ``part_size`` is ``None``).
    """

    size: int
    sha256: bytes
    part_size: int | None = None
    part_sha256: tuple[bytes, ...] = ()

    @property
    def sha256_hex(self) -> str:
        return self.sha256.hex()

    @property
    def sha256_b64(self) -> str:
        """Whole-object SHA-256 as S3 transports it (base64 of the raw digest)."""
        return base64.b64encode(self.sha256).decode("ascii")

    @property
    def composite_b64(self) -> str:
        """S3's composite checksum of the parts (without the ``-N`` suffix)."""
        if self.part_size is None:
            raise ValueError("no part digests were computed")
        return base64.b64encode(hashlib.sha256(b"".join(self.part_sha256)).digest()).decode("ascii")


class Hasher:
    """Incremental whole + per-part SHA-256."""

    __slots__ = ("_part", "_part_fill", "_part_size", "_parts", "_total", "size")

    def __init__(self, part_size: int | None) -> None:
        if part_size is not None and part_size <= 0:
            raise ValueError("part_size must be positive")
        self._total = hashlib.sha256()
        self._part_size = part_size
        self._part = hashlib.sha256()
        self._part_fill = 0
        self._parts: list[bytes] = []
        self.size = 0

    def update(self, chunk: bytes | memoryview) -> None:
        self._total.update(chunk)
        self.size += len(chunk)
        if self._part_size is None:
            return
        view = memoryview(chunk)
        while view:
            take = min(len(view), self._part_size - self._part_fill)
            self._part.update(view[:take])
            self._part_fill += take
            view = view[take:]
            if self._part_fill == self._part_size:
                self._parts.append(self._part.digest())
                self._part = hashlib.sha256()
                self._part_fill = 0

    def finish(self) -> SourceDigest:
        if self._part_size is not None and self._part_fill:
            self._parts.append(self._part.digest())
        return SourceDigest(
            size=self.size,
            sha256=self._total.digest(),
            part_size=self._part_size,
            part_sha256=tuple(self._parts),
        )


def digest_bytes(data: bytes | memoryview, part_size: int | None = None) -> SourceDigest:
    """Digests of an in-memory buffer (pure)."""
    hasher = Hasher(part_size)
    hasher.update(data)
    return hasher.finish()


def digest_file(path: str | os.PathLike[str], part_size: int | None = None) -> SourceDigest:
    """Digests of a file's current content, read in :data:`READ_BLOCK` blocks."""
    hasher = Hasher(part_size)
    buf = bytearray(READ_BLOCK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            hasher.update(view[:n])
    return hasher.finish()


class VerifyingReader(io.RawIOBase):
    """A raw reader that hashes what passes through and checks it at end of stream.

    ``read_some(n)`` returns up to ``n`` bytes (``b""`` at the end). When the end is reached,
    the total size and (if known) SHA-256 are compared with the expected values and
    :class:`IntegrityError` is raised on mismatch, so a consumer that reads to the end never
    silently accepts a corrupted or truncated object. ``on_close`` releases the source.
    """

    def __init__(
        self,
        read_some: Callable[[int], bytes],
        on_close: Callable[[], None],
        *,
        expected_size: int | None,
        expected_sha256: str | None,
        uri: str,
        key: str,
    ) -> None:
        super().__init__()
        self._read_some = read_some
        self._on_close = on_close
        self._expected_size = expected_size
        self._expected_sha256 = expected_sha256
        self._uri = uri
        self._key = key
        self._hash = hashlib.sha256()
        self._size = 0
        self._checked = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.closed:
            raise ValueError("I/O operation on closed stream")
        want = len(buffer)
        if want == 0:
            return 0
        data = self._read_some(want)
        if not data:
            self._check()
            return 0
        n = len(data)
        buffer[:n] = data
        self._hash.update(data)
        self._size += n
        return n

    def _check(self) -> None:
        if self._checked:
            return
        self._checked = True
        if self._expected_size is not None and self._size != self._expected_size:
            raise IntegrityError(
                f"stream ended after {self._size} bytes, expected {self._expected_size}",
                uri=self._uri,
                key=self._key,
            )
        if self._expected_sha256 is not None and self._hash.hexdigest() != self._expected_sha256:
            raise IntegrityError(
                f"content SHA-256 {self._hash.hexdigest()} does not match the recorded "
                f"{self._expected_sha256}",
                uri=self._uri,
                key=self._key,
            )

    def close(self) -> None:
        if not self.closed:
            try:
                self._on_close()
            finally:
                super().close()


def buffered(raw: VerifyingReader) -> BinaryIO:
    """Wrap a raw verifying reader in a buffered binary stream for callers."""
    return io.BufferedReader(raw, READ_BLOCK)
