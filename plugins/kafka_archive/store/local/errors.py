"""How a local store's filesystem failures become the store's errors.

Contract: :func:`os_error` maps an :class:`OSError` of operation ``op`` on ``key`` onto the
:class:`~kafka_archive.store.errors.StoreError` tree (permissions -> AccessDenied; a full
disk, a key nesting under an object, anything else -> StoreError), with a hint saying what to
check.
"""

from __future__ import annotations

import errno

from kafka_archive.store.errors import AccessDenied, StoreError

__all__ = ["os_error"]


def os_error(exc: OSError, op: str, key: str | None, *, uri: str) -> StoreError:
    """The store's error for ``exc``, raised by ``op`` on ``key`` in the store at ``uri``."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, PermissionError):
        return AccessDenied(
            f"{op} failed: {reason}",
            uri=uri,
            key=key,
            hint="Check the file permissions and ownership under the store directory",
        )
    if exc.errno == errno.ENOSPC:
        return StoreError(
            f"{op} failed: {reason}",
            uri=uri,
            key=key,
            hint="Free space on the filesystem holding the store, then retry",
        )
    if isinstance(exc, NotADirectoryError | IsADirectoryError | FileExistsError):
        return StoreError(
            f"{op} failed: {reason}",
            uri=uri,
            key=key,
            hint=(
                "A local store cannot hold both an object 'a' and objects under 'a/'; "
                "choose keys that do not nest under other objects"
            ),
        )
    return StoreError(
        f"{op} failed: {reason}",
        uri=uri,
        key=key,
        hint="Check the filesystem holding the store",
    )
