"""Uploads of the S3 store: boto3's transfer manager and the multipart uploads it creates.

Contract: :meth:`Transfers.upload_once` makes one attempt at uploading bytes or a file under a
full key - a single PUT below ``multipart_threshold``, a multipart upload above it, parts cut
at :meth:`Transfers.part_size` - and raises the store's errors. A failed attempt leaves nothing
behind: every multipart upload created for the key during the attempt is seen (an
``after-call`` hook on ``CreateMultipartUpload``) and aborted, even when s3transfer's own
cleanup could not; a bucket lifecycle rule ``AbortIncompleteMultipartUpload`` remains the
backstop for a process killed mid-upload. Retrying and verifying are the caller's.
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from boto3.s3.transfer import TransferConfig, create_transfer_manager
from botocore import exceptions as bex
from s3transfer.utils import ChunksizeAdjuster

from kafka_archive.store.s3.errors import ErrorTranslator
from kafka_archive.store.s3.options import S3Options

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from s3transfer.manager import TransferManager

__all__ = ["Transfers"]

log = logging.getLogger(__name__)


class Transfers:
    """The transfer manager of one store's client (created on first use) and the multipart
    uploads in flight, per full key."""

    def __init__(
        self, client: S3Client, bucket: str, options: S3Options, translate: ErrorTranslator
    ) -> None:
        self._client = client
        self._bucket = bucket
        self._opts = options
        self._translate = translate
        self._lock = threading.Lock()
        self._watched: dict[str, list[list[str]]] = {}
        self._transfer: TransferManager | None = None
        self._adjuster = ChunksizeAdjuster()
        # Remember every multipart upload created for a key being written, so a failed put can
        # abort it even when s3transfer's own cleanup could not.
        client.meta.events.register(
            "after-call.s3.CreateMultipartUpload", self._on_create_multipart_upload
        )

    def part_size(self, size: int) -> int:
        """The part size s3transfer will use for a multipart upload of ``size`` bytes."""
        return self._adjuster.adjust_chunksize(self._opts.multipart_chunksize, size)

    def close(self) -> None:
        """Shut the transfer manager down (if one was created)."""
        with self._lock:
            transfer, self._transfer = self._transfer, None
        if transfer is not None:
            transfer.shutdown()

    def _transfer_manager(self) -> TransferManager:
        with self._lock:
            if self._transfer is None:
                config = TransferConfig(
                    multipart_threshold=self._opts.multipart_threshold,
                    multipart_chunksize=self._opts.multipart_chunksize,
                    max_concurrency=self._opts.max_concurrency,
                    use_threads=True,
                    # The classic manager is the one whose part sizes we reproduce exactly.
                    preferred_transfer_client="classic",
                )
                manager: TransferManager = create_transfer_manager(self._client, config)
                self._transfer = manager
            return self._transfer

    def _on_create_multipart_upload(self, parsed: Mapping[str, Any], **_: Any) -> None:
        key, upload_id = parsed.get("Key"), parsed.get("UploadId")
        if not key or not upload_id:
            return
        with self._lock:
            for ids in self._watched.get(key, ()):
                ids.append(upload_id)

    @contextlib.contextmanager
    def _watch_uploads(self, full_key: str) -> Iterator[list[str]]:
        ids: list[str] = []
        with self._lock:
            self._watched.setdefault(full_key, []).append(ids)
        try:
            yield ids
        finally:
            with self._lock:
                lists = self._watched[full_key]
                lists.remove(ids)
                if not lists:
                    del self._watched[full_key]

    def _abort_uploads(self, full_key: str, upload_ids: list[str]) -> None:
        for upload_id in list(upload_ids):
            try:
                self._client.abort_multipart_upload(
                    Bucket=self._bucket, Key=full_key, UploadId=upload_id
                )
            except bex.ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "NoSuchUpload":
                    log.warning(
                        "could not abort multipart upload %s of %s: %s; a bucket lifecycle rule "
                        "AbortIncompleteMultipartUpload will remove its parts",
                        upload_id,
                        full_key,
                        self._translate(exc, "abort", full_key).message,
                    )
            except Exception as exc:
                log.warning(
                    "could not abort multipart upload %s of %s: %s; a bucket lifecycle rule "
                    "AbortIncompleteMultipartUpload will remove its parts",
                    upload_id,
                    full_key,
                    self._translate(exc, "abort", full_key).message,
                )

    def upload_once(
        self, full_key: str, key: str, source: bytes | str, extra: Mapping[str, Any]
    ) -> None:
        # Fresh copies each attempt: s3transfer adds entries to extra_args.
        extra_args = {k: dict(v) if isinstance(v, dict) else v for k, v in extra.items()}
        fileobj: io.BytesIO | str = io.BytesIO(source) if isinstance(source, bytes) else source
        with self._watch_uploads(full_key) as upload_ids:
            future = None
            try:
                future = self._transfer_manager().upload(
                    fileobj, self._bucket, full_key, extra_args=extra_args
                )
                future.result()
            except BaseException as exc:
                if future is not None and not future.done():
                    future.cancel()
                    with contextlib.suppress(BaseException):
                        future.result()  # wait for s3transfer's own cleanup to finish
                self._abort_uploads(full_key, upload_ids)
                if isinstance(exc, Exception):
                    raise self._translate(exc, "upload", key) from exc
                raise
