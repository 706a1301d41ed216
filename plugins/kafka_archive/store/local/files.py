"""Filesystem primitives of the local store's atomic, durable writes.

Contract: :func:`write_all` writes every byte (retrying short writes); :func:`fsync_dir` makes
a rename durable (best effort where a filesystem refuses to fsync a directory);
:func:`link_exclusive` publishes a complete temp file under a key only if the key is absent
(link(2)), raising :class:`KeyExists` if it is not. :func:`fingerprint`, :func:`etag` and
:func:`mtime` describe a file from its ``stat``: the fingerprint (inode, size, mtime_ns) is
what a sidecar must match to be trusted.
"""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime
from pathlib import Path

from kafka_archive.errors import InternalSignal

__all__ = [
    "FILE_MODE",
    "KeyExists",
    "etag",
    "fingerprint",
    "fsync_dir",
    "link_exclusive",
    "mtime",
    "write_all",
]

#: the mode of every object file.
FILE_MODE = 0o644


class KeyExists(InternalSignal):
    """Internal: an exclusive publish found the key already taken by another writer."""


def fingerprint(st: os.stat_result) -> dict[str, int]:
    return {"ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def etag(st: os.stat_result) -> str:
    return f"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}"


def mtime(st: os.stat_result) -> datetime:
    return datetime.fromtimestamp(st.st_mtime_ns / 1e9, tz=UTC)


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(path: Path) -> None:
    # Make the rename itself durable. Some filesystems refuse fsync on directories: the data is
    # already fsynced, so treat that as best effort.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def link_exclusive(tmp: Path, dest: Path) -> bool:
    """Publish ``tmp`` as ``dest`` only if ``dest`` does not exist (True), raise
    :class:`KeyExists` if it does, or return False on a filesystem without hard links
    (the caller then publishes with a plain rename, check-then-write as before)."""
    try:
        os.link(tmp, dest)
    except FileExistsError:
        raise KeyExists(str(dest)) from None
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            return False
        raise
    return True
