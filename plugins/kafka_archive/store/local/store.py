"""The :class:`LocalStore`: the ObjectStore operations on a directory of a local filesystem.

Contract: writes go to a temp file beside the key, are fsynced, re-read and re-hashed, get their
sidecar (:mod:`~kafka_archive.store.local.sidecar`) and are then renamed over the key (or, for
``put_if_absent``, linked: :func:`~kafka_archive.store.local.files.link_exclusive`), so a
reader sees the old object, the new one or nothing. Reads check the content against a trusted
sidecar's SHA-256; ranged reads copy or map (:mod:`~kafka_archive.store.local.ranges`).
Failures are the store's errors (:mod:`~kafka_archive.store.local.errors`). See
:mod:`kafka_archive.store.local` for the layout and the guarantees.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

from kafka_archive.store._common import check_range, put_if_absent_impl
from kafka_archive.store._digest import (
    READ_BLOCK,
    Hasher,
    SourceDigest,
    VerifyingReader,
    buffered,
    digest_file,
)
from kafka_archive.store.base import (
    Source,
    StoredObject,
    check_metadata,
    check_sha256,
    validate_key,
    validate_prefix,
)
from kafka_archive.store.errors import (
    IntegrityError,
    InvalidRange,
    InvalidRequest,
    ObjectNotFound,
    StoreError,
)
from kafka_archive.store.local.errors import os_error
from kafka_archive.store.local.files import (
    FILE_MODE,
    KeyExists,
    etag,
    fingerprint,
    fsync_dir,
    link_exclusive,
    mtime,
    write_all,
)
from kafka_archive.store.local.listing import list_objects
from kafka_archive.store.local.paths import TMP_PREFIX, object_path, sidecar_path
from kafka_archive.store.local.ranges import MAP_MIN_BYTES, map_readonly, pread_exact
from kafka_archive.store.local.sidecar import read_sidecar, write_sidecar

__all__ = ["LocalStore"]


class LocalStore:
    """An :class:`~kafka_archive.store.base.ObjectStore` rooted at a local directory.

    Args:
        root: the directory (created on first write).
        fsync: fsync files and directories on write (turn off only for throwaway data).
        sidecars: keep each object's SHA-256 and metadata in its ``.ka-meta-*`` sidecar. Off
            for a directory other tools read by globbing (an export's output: a reader of
            ``dir/**`` would trip on them); objects then have no stored SHA-256 or metadata
            (``head`` says ``None``), and whoever needs them keeps them (the export's manifest).
    """

    def __init__(
        self, root: str | os.PathLike[str], *, fsync: bool = True, sidecars: bool = True
    ) -> None:
        self._root = Path(os.path.abspath(os.fspath(root)))
        self._fsync = fsync
        self._sidecars = sidecars
        self._uri = self._root.as_uri()

    def __repr__(self) -> str:
        return f"LocalStore(uri={self._uri!r})"

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def root(self) -> Path:
        return self._root

    # ------------------------------------------------------------------ paths and errors

    def _path(self, key: str) -> Path:
        return object_path(self._root, key)

    def _sidecar_path(self, key: str) -> Path:
        return sidecar_path(self._root, key)

    def _os_error(self, exc: OSError, op: str, key: str | None) -> StoreError:
        return os_error(exc, op, key, uri=self._uri)

    def _not_found(self, key: str) -> ObjectNotFound:
        return ObjectNotFound("no such object", uri=self._uri, key=key)

    # ------------------------------------------------------------------ sidecars

    def _read_sidecar(self, key: str, st: os.stat_result) -> tuple[str | None, dict[str, str]]:
        """(sha256, metadata) if the sidecar describes exactly this file, else (None, {})."""
        if not self._sidecars:
            return None, {}
        return read_sidecar(self._sidecar_path(key), st)

    def _write_sidecar(
        self, key: str, st: os.stat_result, sha256: str, metadata: Mapping[str, str]
    ) -> None:
        if self._sidecars:
            write_sidecar(self._sidecar_path(key), st, sha256, metadata, fsync=self._fsync)

    # ------------------------------------------------------------------ writes

    def _write_atomic(
        self,
        key: str,
        fill: Callable[[int], SourceDigest],
        expected: str | None,
        metadata: Mapping[str, str],
        exclusive: bool = False,
    ) -> StoredObject:
        """Write to a temp file, verify it, publish it under ``key``.

        ``exclusive``: publish with link(2), which fails when ``key`` exists, so of writers
        racing on one key exactly one publishes (the others get :class:`KeyExists`); the
        sidecar is written only by that one, after the link.
        """
        dest = self._path(key)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=TMP_PREFIX, dir=dest.parent)
        except OSError as exc:
            raise self._os_error(exc, "write", key) from exc
        tmp = Path(tmp_name)
        published = False
        try:
            try:
                digest = fill(fd)
                os.fchmod(fd, FILE_MODE)
                if self._fsync:
                    os.fsync(fd)
            except OSError as exc:
                raise self._os_error(exc, "write", key) from exc
            if expected is not None and digest.sha256_hex != expected:
                raise IntegrityError(
                    f"source SHA-256 {digest.sha256_hex} does not match the expected {expected}; "
                    "nothing was stored",
                    uri=self._uri,
                    key=key,
                    hint="Check that the file is the one you meant and that it is complete",
                )
            # Re-read what landed in the temp file before publishing it: catches short writes
            # and a filesystem returning different bytes than it was given.
            reread = digest_file(tmp)
            if reread.sha256 != digest.sha256 or reread.size != digest.size:
                raise IntegrityError(
                    f"the written file reads back as {reread.size} bytes with SHA-256 "
                    f"{reread.sha256_hex}, but {digest.size} bytes with SHA-256 "
                    f"{digest.sha256_hex} were written; nothing was stored",
                    uri=self._uri,
                    key=key,
                    hint="Check the filesystem and disk health (dmesg, SMART), then retry",
                )
            st = os.fstat(fd)
            try:
                if exclusive and link_exclusive(tmp, dest):
                    published = True
                    self._write_sidecar(key, st, digest.sha256_hex, metadata)
                else:
                    self._write_sidecar(key, st, digest.sha256_hex, metadata)
                    os.replace(tmp, dest)
                    published = True
            except OSError as exc:
                raise self._os_error(exc, "write", key) from exc
            if self._fsync:
                fsync_dir(dest.parent)
            return StoredObject(
                key=key,
                size=st.st_size,
                sha256=digest.sha256_hex,
                etag=etag(st),
                last_modified=mtime(st),
                metadata=dict(metadata),
            )
        finally:
            os.close(fd)
            if not published or (exclusive and tmp.exists()):
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def put_file(
        self,
        key: str,
        local_path: str | os.PathLike[str],
        *,
        sha256: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> StoredObject:
        return self._put_file(key, local_path, sha256, metadata, exclusive=False)

    def _put_file(
        self,
        key: str,
        local_path: str | os.PathLike[str],
        sha256: str | None,
        metadata: Mapping[str, str] | None,
        *,
        exclusive: bool,
    ) -> StoredObject:
        key = validate_key(key)
        expected = check_sha256(sha256)
        meta = check_metadata(metadata)
        source = os.fspath(local_path)
        with open(source, "rb", buffering=0) as src:
            before = os.fstat(src.fileno())

            def fill(fd: int) -> SourceDigest:
                hasher = Hasher(None)
                buf = bytearray(READ_BLOCK)
                view = memoryview(buf)
                while n := src.readinto(buf):
                    hasher.update(view[:n])
                    write_all(fd, view[:n])
                after = os.fstat(src.fileno())
                if fingerprint(after) != fingerprint(before) or hasher.size != before.st_size:
                    raise IntegrityError(
                        f"source file {source!r} changed while it was being copied; "
                        "nothing was stored",
                        uri=self._uri,
                        key=key,
                        hint="Upload only files that are no longer being written",
                    )
                return hasher.finish()

            return self._write_atomic(key, fill, expected, meta, exclusive)

    def put_bytes(
        self,
        key: str,
        data: bytes,
        *,
        sha256: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> StoredObject:
        return self._put_bytes(key, data, sha256, metadata, exclusive=False)

    def _put_bytes(
        self,
        key: str,
        data: bytes,
        sha256: str | None,
        metadata: Mapping[str, str] | None,
        *,
        exclusive: bool,
    ) -> StoredObject:
        key = validate_key(key)
        expected = check_sha256(sha256)
        meta = check_metadata(metadata)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidRequest(f"data must be bytes, got {type(data).__name__}", key=key)
        payload = bytes(data)

        def fill(fd: int) -> SourceDigest:
            hasher = Hasher(None)
            hasher.update(payload)
            write_all(fd, payload)
            return hasher.finish()

        return self._write_atomic(key, fill, expected, meta, exclusive)

    def put_if_absent(
        self,
        key: str,
        source: Source,
        *,
        sha256: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> tuple[StoredObject, bool]:
        """As the protocol says, and atomic here: the write publishes with link(2), so of
        writers racing on an absent key exactly one gets ``created=True`` (each writer's
        report then counts only what it wrote); the others compare with what it stored."""
        if self.head(validate_key(key)) is None:
            try:
                if isinstance(source, bytes | bytearray | memoryview):
                    obj = self._put_bytes(key, bytes(source), sha256, metadata, exclusive=True)
                else:
                    obj = self._put_file(key, source, sha256, metadata, exclusive=True)
                return obj, True
            except KeyExists:
                pass  # another writer published it between our head and our link
        return put_if_absent_impl(self, key, source, sha256=sha256, metadata=metadata)

    # ------------------------------------------------------------------ reads

    def _stat_object(self, key: str) -> os.stat_result | None:
        try:
            st = os.stat(self._path(key))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise self._os_error(exc, "stat", key) from exc
        return st if stat.S_ISREG(st.st_mode) else None

    def head(self, key: str) -> StoredObject | None:
        key = validate_key(key)
        st = self._stat_object(key)
        if st is None:
            return None
        sha, meta = self._read_sidecar(key, st)
        return StoredObject(
            key=key,
            size=st.st_size,
            sha256=sha,
            etag=etag(st),
            last_modified=mtime(st),
            metadata=meta,
        )

    def exists(self, key: str) -> bool:
        key = validate_key(key)
        return self._stat_object(key) is not None

    def _open(self, key: str) -> tuple[BinaryIO, os.stat_result]:
        try:
            f = open(self._path(key), "rb", buffering=0)  # noqa: SIM115 - returned to caller
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise self._not_found(key) from exc
        except OSError as exc:
            raise self._os_error(exc, "read", key) from exc
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            f.close()
            raise self._not_found(key)
        return f, st

    def get_bytes(self, key: str) -> bytes:
        key = validate_key(key)
        f, st = self._open(key)
        with f:
            sha, _ = self._read_sidecar(key, st)
            try:
                data = f.read()
            except OSError as exc:
                raise self._os_error(exc, "read", key) from exc
        if sha is not None:
            got = hashlib.sha256(data).hexdigest()
            if got != sha:
                raise IntegrityError(
                    f"content SHA-256 {got} does not match the recorded {sha}",
                    uri=self._uri,
                    key=key,
                )
        return data

    def get_range(self, key: str, start: int, end_exclusive: int) -> bytes:
        key = validate_key(key)
        check_range(start, end_exclusive, uri=self._uri, key=key)
        f, st = self._open(key)
        with f:
            if end_exclusive > st.st_size:
                raise self._past_end(key, start, end_exclusive, st.st_size)
            try:
                data = pread_exact(f.fileno(), start, end_exclusive, uri=self._uri, key=key)
            except OSError as exc:
                raise self._os_error(exc, "read", key) from exc
        return data

    def _past_end(self, key: str, start: int, end_exclusive: int, size: int) -> InvalidRange:
        return InvalidRange(
            f"range [{start}, {end_exclusive}) extends past the end of the {size}-byte object",
            uri=self._uri,
            key=key,
        )

    def get_range_view(self, key: str, start: int, end_exclusive: int) -> memoryview:
        """The bytes ``[start, end_exclusive)`` as a read-only view of the file mapped into
        memory (no copy), valid while the view or any slice of it lives (the mapping is
        released with the last one). Same checks and errors as :meth:`get_range`.

        Ranges under 512 KiB are copied with ``pread`` instead (a mapping costs more than the
        copy there). See :mod:`kafka_archive.store.local` for why mapping an object of this store
        cannot end in SIGBUS. No ``madvise``/``MAP_POPULATE``: measured on page-cached 16 MiB
        segments (mapping, then one CRC-32C pass), plain mappings 86 ms/GiB,
        ``MADV_SEQUENTIAL`` 88, ``MADV_WILLNEED`` 94, ``MAP_POPULATE`` 120 (the kernel's
        fault-around already maps the page cache's large folios in big steps).
        """
        key = validate_key(key)
        check_range(start, end_exclusive, uri=self._uri, key=key)
        length = end_exclusive - start
        if length < MAP_MIN_BYTES:
            return memoryview(self.get_range(key, start, end_exclusive))
        f, st = self._open(key)
        with f:
            if end_exclusive > st.st_size:
                raise self._past_end(key, start, end_exclusive, st.st_size)
            try:
                view = map_readonly(f.fileno(), start, length)
            except OSError as exc:
                raise self._os_error(exc, "read", key) from exc
        return view

    def open_stream(self, key: str) -> BinaryIO:
        key = validate_key(key)
        f, st = self._open(key)
        sha, _ = self._read_sidecar(key, st)

        def read_some(n: int) -> bytes:
            try:
                return f.read(n) or b""
            except OSError as exc:
                raise self._os_error(exc, "read", key) from exc

        raw = VerifyingReader(
            read_some,
            f.close,
            expected_size=st.st_size,
            expected_sha256=sha,
            uri=self._uri,
            key=key,
        )
        return buffered(raw)

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        prefix = validate_prefix(prefix)
        yield from list_objects(self._root, prefix, uri=self._uri)

    # ------------------------------------------------------------------ delete / lifecycle

    def delete(self, key: str) -> None:
        key = validate_key(key)
        for path in (self._path(key), self._sidecar_path(key)):
            try:
                os.unlink(path)
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                pass
            except OSError as exc:
                if exc.errno == errno.EPERM and path.is_dir():
                    continue  # a "directory" key: there is no object to delete
                raise self._os_error(exc, "delete", key) from exc

    def close(self) -> None:
        """Nothing to release; present for the protocol."""

    def __enter__(self) -> LocalStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
