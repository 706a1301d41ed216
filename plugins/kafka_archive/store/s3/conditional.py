"""Conditional writes of the S3 store: ``If-None-Match: *`` for ``put_if_absent``.

Contract: while a key is inside :meth:`ConditionalWrites.exclusive`, every ``PutObject`` and
``CompleteMultipartUpload`` of that full key carries ``If-None-Match: *`` (S3's conditional
write), so of writers racing on an absent key exactly one creates it; the others get HTTP 412,
which :class:`~kafka_archive.store.s3.errors.ErrorTranslator` reports as
:class:`~kafka_archive.store.s3.errors.KeyExists`. s3transfer does not pass ``IfNoneMatch``
through its ``extra_args``, hence the parameter is added by a ``before-parameter-build`` hook,
on the way into botocore.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["ConditionalWrites"]


class ConditionalWrites:
    """The full keys being written exclusively through one client (with how many writers)."""

    def __init__(self, client: S3Client) -> None:
        self._lock = threading.Lock()
        self._exclusive: dict[str, int] = {}
        for op in ("PutObject", "CompleteMultipartUpload"):
            client.meta.events.register(f"before-parameter-build.s3.{op}", self._add_if_none_match)

    @contextlib.contextmanager
    def exclusive(self, full_key: str) -> Iterator[None]:
        """Writes of ``full_key`` inside this block create it only if it is absent."""
        with self._lock:
            self._exclusive[full_key] = self._exclusive.get(full_key, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._exclusive[full_key] -= 1
                if not self._exclusive[full_key]:
                    del self._exclusive[full_key]

    def _add_if_none_match(self, params: dict[str, Any], **_: Any) -> None:
        with self._lock:
            exclusive = params.get("Key") in self._exclusive
        if exclusive:
            params["IfNoneMatch"] = "*"
