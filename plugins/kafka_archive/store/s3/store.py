"""The :class:`S3Store`: the :class:`~kafka_archive.store.base.ObjectStore` operations on S3.

Contract: every operation validates its key, runs under whole-operation retries
(:mod:`~kafka_archive.store.s3.retry`) and reports failures as the store's errors
(:mod:`~kafka_archive.store.s3.errors`). Writes hash the source once, upload it
(:mod:`~kafka_archive.store.s3.transfer`) with S3 flexible checksums and verify the stored
object against the source (:mod:`~kafka_archive.store.s3.checksums`), deleting it on a
mismatch; ``put_if_absent`` writes conditionally (:mod:`~kafka_archive.store.s3.conditional`).
Reads check the content against the recorded ``sha256``. See :mod:`kafka_archive.store.s3` for
the whole story.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

import boto3
from botocore import exceptions as bex

from kafka_archive.store._common import check_range, put_if_absent_impl
from kafka_archive.store._digest import (
    SourceDigest,
    VerifyingReader,
    buffered,
    digest_bytes,
    digest_file,
)
from kafka_archive.store.base import (
    META_SHA256,
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
    StoreUnavailable,
)
from kafka_archive.store.s3.checksums import upload_problems, whole_object_sha256
from kafka_archive.store.s3.client import make_client
from kafka_archive.store.s3.conditional import ConditionalWrites
from kafka_archive.store.s3.errors import ErrorTranslator, KeyExists
from kafka_archive.store.s3.options import S3Options, parse_s3_uri, redact_url
from kafka_archive.store.s3.retry import retrying
from kafka_archive.store.s3.transfer import Transfers

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import HeadObjectOutputTypeDef

__all__ = ["S3Store"]

T = TypeVar("T")


class S3Store:
    """An :class:`~kafka_archive.store.base.ObjectStore` on an S3 bucket under a key prefix.

    Args:
        bucket: bucket name.
        prefix: key prefix inside the bucket ('' for the whole bucket).
        options: :class:`S3Options`.
        session: a ``boto3.session.Session`` to build the client from (default: a new one,
            which reads the standard AWS environment).
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        options: S3Options | None = None,
        *,
        session: boto3.session.Session | None = None,
    ) -> None:
        self._bucket = bucket
        self._prefix = prefix.strip("/")
        self._uri = f"s3://{bucket}/{self._prefix}" if self._prefix else f"s3://{bucket}"
        parse_s3_uri(self._uri)  # validate bucket and prefix
        self._opts = options or S3Options()
        self._client = make_client(self._opts, session, self._uri)
        self._endpoint = redact_url(self._client.meta.endpoint_url)
        self._translate = ErrorTranslator(
            uri=self._uri,
            bucket=self._bucket,
            endpoint=self._endpoint,
            max_attempts=self._opts.max_attempts,
        )
        self._transfers = Transfers(self._client, self._bucket, self._opts, self._translate)
        # Keys being written by put_if_absent carry If-None-Match: * (S3's conditional write).
        self._conditional = ConditionalWrites(self._client)

    def __repr__(self) -> str:
        return (
            f"S3Store(uri={self._uri!r}, endpoint_url={self._endpoint!r}, "
            f"region={self._client.meta.region_name!r})"
        )

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def options(self) -> S3Options:
        return self._opts

    @property
    def client(self) -> S3Client:
        """The underlying boto3 client (for diagnostics and tests)."""
        return self._client

    # ------------------------------------------------------------------ helpers

    def _full(self, key: str) -> str:
        return f"{self._prefix}/{key}" if self._prefix else key

    def _rel(self, full_key: str) -> str:
        return full_key[len(self._prefix) + 1 :] if self._prefix else full_key

    def _retrying(self, op: str, key: str | None, fn: Callable[[], T]) -> T:
        """Run ``fn`` with whole-operation retries on :class:`StoreUnavailable`."""
        return retrying(op, key, fn, opts=self._opts, uri=self._uri)

    # ------------------------------------------------------------------ writes

    def _put(
        self,
        key: str,
        source: bytes | str,
        sha256: str | None,
        metadata: Mapping[str, str] | None,
    ) -> StoredObject:
        key = validate_key(key)
        expected = check_sha256(sha256)
        meta = check_metadata(metadata)
        full_key = self._full(key)
        size = len(source) if isinstance(source, bytes) else os.stat(source).st_size
        multipart = size >= self._opts.multipart_threshold
        # The part size s3transfer will use for this size; it applies the same adjustment.
        part_size = self._transfers.part_size(size) if multipart else None
        digest = (
            digest_bytes(source, part_size)
            if isinstance(source, bytes)
            else digest_file(source, part_size)
        )
        if digest.size != size:
            raise IntegrityError(
                f"source changed size while being hashed ({size} -> {digest.size} bytes); "
                "nothing was uploaded",
                uri=self._uri,
                key=key,
                hint="Upload only files that are no longer being written",
            )
        if expected is not None and digest.sha256_hex != expected:
            raise IntegrityError(
                f"source SHA-256 {digest.sha256_hex} does not match the expected {expected}; "
                "nothing was uploaded",
                uri=self._uri,
                key=key,
                hint="Check that the file is the one you meant and that it is complete",
            )
        extra: dict[str, Any] = {
            "ChecksumAlgorithm": "SHA256",
            "Metadata": {**meta, META_SHA256: digest.sha256_hex},
        }
        if not multipart:
            # S3 verifies a single PUT against this digest of *our* read of the source. (For a
            # multipart upload a full-object value would turn it into a FULL_OBJECT checksum,
            # which S3 does not support for SHA-256; per-part digests are verified instead.)
            extra["ChecksumSHA256"] = digest.sha256_b64
        if self._opts.sse is not None:
            extra["ServerSideEncryption"] = self._opts.sse
            if self._opts.sse_kms_key_id is not None:
                extra["SSEKMSKeyId"] = self._opts.sse_kms_key_id
        self._retrying(
            "upload", key, lambda: self._transfers.upload_once(full_key, key, source, extra)
        )
        return self._verify_upload(full_key, key, digest, multipart)

    def _verify_upload(
        self, full_key: str, key: str, digest: SourceDigest, multipart: bool
    ) -> StoredObject:
        head = self._retrying("verify", key, lambda: self._head_raw(full_key, key))
        if head is None:
            raise IntegrityError(
                "the object is missing right after a successful upload",
                uri=self._uri,
                key=key,
                hint="Another writer may have deleted it; check for concurrent deletes and retry",
            )
        problems = upload_problems(
            head, digest, multipart, require_store_checksum=self._opts.require_store_checksum
        )
        if problems:
            with contextlib.suppress(StoreError):
                self._delete_full(full_key, key)
            raise IntegrityError(
                "the stored object does not match the source (" + "; ".join(problems) + "); "
                "it was deleted",
                uri=self._uri,
                key=key,
                hint="The data changed in transit or the source changed during the upload; retry",
            )
        return self._stored_from_head(key, head)

    def put_file(
        self,
        key: str,
        local_path: str | os.PathLike[str],
        *,
        sha256: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> StoredObject:
        return self._put(key, os.fspath(local_path), sha256, metadata)

    def put_bytes(
        self,
        key: str,
        data: bytes,
        *,
        sha256: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> StoredObject:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidRequest(f"data must be bytes, got {type(data).__name__}", key=key)
        return self._put(key, bytes(data), sha256, metadata)

    def put_if_absent(
        self,
        key: str,
        source: Source,
        *,
        sha256: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> tuple[StoredObject, bool]:
        """As the protocol says, and atomic on stores with conditional writes (S3, MinIO,
        moto): the write carries ``If-None-Match: *``, so of writers racing on an absent key
        exactly one gets ``created=True`` (each archiver's report then counts only what it
        wrote); the others compare with what it stored. A retried write whose first attempt
        landed unseen reports ``created=False``: an undercount, never a double count."""
        if self.head(validate_key(key)) is None:
            payload = bytes(source) if isinstance(source, bytes | bytearray | memoryview) else None
            try:
                with self._conditional.exclusive(self._full(key)):
                    obj = self._put(
                        key, payload if payload is not None else os.fspath(source), sha256, metadata
                    )
                return obj, True
            except KeyExists:
                pass  # another writer created it between our head and our write
        return put_if_absent_impl(self, key, source, sha256=sha256, metadata=metadata)

    # ------------------------------------------------------------------ reads

    def _head_raw(self, full_key: str, key: str) -> HeadObjectOutputTypeDef | None:
        try:
            return self._client.head_object(
                Bucket=self._bucket, Key=full_key, ChecksumMode="ENABLED"
            )
        except bex.ClientError as exc:
            err = self._translate(exc, "head", key)
            if isinstance(err, ObjectNotFound):
                return None
            raise err from exc
        except Exception as exc:
            raise self._translate(exc, "head", key) from exc

    def _stored_from_head(self, key: str, head: HeadObjectOutputTypeDef) -> StoredObject:
        meta = dict(head.get("Metadata", {}))
        recorded = meta.pop(META_SHA256, None)
        whole = whole_object_sha256(head)
        if recorded is not None and whole is not None and recorded != whole:
            raise IntegrityError(
                f"recorded sha256 {recorded} disagrees with the store's checksum {whole}",
                uri=self._uri,
                key=key,
            )
        etag = head.get("ETag")
        return StoredObject(
            key=key,
            size=head["ContentLength"],
            sha256=recorded or whole,
            etag=etag.strip('"') if etag else None,
            version_id=head.get("VersionId"),
            last_modified=head.get("LastModified"),
            metadata=meta,
        )

    def head(self, key: str) -> StoredObject | None:
        key = validate_key(key)
        full_key = self._full(key)
        raw = self._retrying("head", key, lambda: self._head_raw(full_key, key))
        return None if raw is None else self._stored_from_head(key, raw)

    def exists(self, key: str) -> bool:
        key = validate_key(key)
        full_key = self._full(key)
        return self._retrying("head", key, lambda: self._head_raw(full_key, key)) is not None

    def get_bytes(self, key: str) -> bytes:
        key = validate_key(key)
        full_key = self._full(key)

        def once() -> bytes:
            try:
                resp = self._client.get_object(
                    Bucket=self._bucket, Key=full_key, ChecksumMode="ENABLED"
                )
                body = resp["Body"]
                try:
                    data = body.read()
                finally:
                    body.close()
            except Exception as exc:
                raise self._translate(exc, "get", key) from exc
            if len(data) != resp["ContentLength"]:
                raise StoreUnavailable(
                    f"get returned {len(data)} of {resp['ContentLength']} bytes",
                    uri=self._uri,
                    key=key,
                )
            recorded = resp.get("Metadata", {}).get(META_SHA256)
            if recorded is not None:
                got = hashlib.sha256(data).hexdigest()
                if got != recorded:
                    raise IntegrityError(
                        f"content SHA-256 {got} does not match the recorded {recorded}",
                        uri=self._uri,
                        key=key,
                    )
            return data

        return self._retrying("get", key, once)

    def get_range(self, key: str, start: int, end_exclusive: int) -> bytes:
        key = validate_key(key)
        check_range(start, end_exclusive, uri=self._uri, key=key)
        full_key = self._full(key)
        if start == end_exclusive:
            # HTTP cannot express an empty range; still report a missing object.
            if self.head(key) is None:
                raise ObjectNotFound("no such object", uri=self._uri, key=key)
            return b""

        def once() -> bytes:
            try:
                resp = self._client.get_object(
                    Bucket=self._bucket, Key=full_key, Range=f"bytes={start}-{end_exclusive - 1}"
                )
                body = resp["Body"]
                try:
                    data = body.read()
                finally:
                    body.close()
            except bex.ClientError as exc:
                err = self._translate(exc, "get_range", key)
                if isinstance(err, InvalidRange):
                    size = exc.response.get("Error", {}).get("ActualObjectSize")
                    raise InvalidRange(
                        f"range [{start}, {end_exclusive}) starts past the end of the "
                        f"{size if size is not None else '?'}-byte object",
                        uri=self._uri,
                        key=key,
                    ) from exc
                raise err from exc
            except Exception as exc:
                raise self._translate(exc, "get_range", key) from exc
            if "ContentRange" not in resp:
                data = data[start:end_exclusive]  # the server ignored Range and sent it all
            if len(data) != end_exclusive - start:
                total = resp.get("ContentRange", "").rpartition("/")[2] or "?"
                raise InvalidRange(
                    f"range [{start}, {end_exclusive}) extends past the end of the "
                    f"{total}-byte object",
                    uri=self._uri,
                    key=key,
                )
            return data

        return self._retrying("get_range", key, once)

    def get_range_view(self, key: str, start: int, end_exclusive: int) -> memoryview:
        """:meth:`get_range` as a read-only view (the body has to be read into memory anyway:
        the view is of those bytes, no further copy)."""
        return memoryview(self.get_range(key, start, end_exclusive))

    def open_stream(self, key: str) -> BinaryIO:
        key = validate_key(key)
        full_key = self._full(key)

        def once() -> Any:
            try:
                return self._client.get_object(Bucket=self._bucket, Key=full_key)
            except Exception as exc:
                raise self._translate(exc, "open", key) from exc

        resp = self._retrying("open", key, once)
        body = resp["Body"]

        def read_some(n: int) -> bytes:
            try:
                data: bytes = body.read(n)
            except Exception as exc:
                raise self._translate(exc, "read", key) from exc
            return data

        raw = VerifyingReader(
            read_some,
            body.close,
            expected_size=resp["ContentLength"],
            expected_sha256=resp.get("Metadata", {}).get(META_SHA256),
            uri=self._uri,
            key=key,
        )
        return buffered(raw)

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        prefix = validate_prefix(prefix)
        full_prefix = self._full(prefix) if prefix else (self._prefix + "/" if self._prefix else "")
        paginator = self._client.get_paginator("list_objects_v2")
        pages = paginator.paginate(
            Bucket=self._bucket,
            Prefix=full_prefix,
            PaginationConfig={"PageSize": self._opts.list_page_size},
        )
        try:
            for page in pages:
                for item in page.get("Contents", []):
                    etag = item.get("ETag")
                    yield StoredObject(
                        key=self._rel(item["Key"]),
                        size=item["Size"],
                        etag=etag.strip('"') if etag else None,
                        last_modified=item.get("LastModified"),
                    )
        except StoreError:
            raise
        except Exception as exc:
            raise self._translate(exc, "list", prefix or None) from exc

    # ------------------------------------------------------------------ delete / lifecycle

    def _delete_full(self, full_key: str, key: str) -> None:
        def once() -> None:
            try:
                self._client.delete_object(Bucket=self._bucket, Key=full_key)
            except Exception as exc:
                err = self._translate(exc, "delete", key)
                if not isinstance(err, ObjectNotFound):
                    raise err from exc

        self._retrying("delete", key, once)

    def delete(self, key: str) -> None:
        key = validate_key(key)
        self._delete_full(self._full(key), key)

    def close(self) -> None:
        self._transfers.close()
        self._client.close()

    def __enter__(self) -> S3Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
