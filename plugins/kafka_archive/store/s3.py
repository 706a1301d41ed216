"""Amazon S3 and S3-compatible stores (MinIO, Ceph RGW, ...) as an :class:`ObjectStore`, via boto3.

Configuration:
    * The client comes from ``boto3.session.Session()``, so the standard AWS environment is
      honoured natively: ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
      ``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` (with ``~/.aws/config`` and ``credentials``),
      ``AWS_DEFAULT_REGION`` and ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3``. botocore itself
      does not read ``AWS_REGION``; like the other AWS SDKs this store gives it precedence over
      ``AWS_DEFAULT_REGION``. Credentials are never taken as options, stored on the object,
      logged or put in error messages.
    * With a custom endpoint (option or environment) path-style addressing is the default,
      which is what S3-compatible stores expect.
    * ``sse='AES256'`` or ``sse='aws:kms'`` (+ ``sse_kms_key_id``) is sent on every write.

Writes (``put_file`` / ``put_bytes``) go through boto3's transfer manager: a single PUT below
``multipart_threshold``, a multipart upload above it. Integrity is checked end to end:

    1. the source is hashed once, giving its SHA-256 and - when it will be uploaded in parts -
       the SHA-256 of every part, cut at exactly the part size the transfer manager will use
       (``s3transfer``'s ``ChunksizeAdjuster``);
    2. the upload uses S3 flexible checksums (``ChecksumAlgorithm='SHA256'``): botocore hashes
       each request body as it sends it and S3 rejects a body that does not match; for a
       single PUT the SHA-256 from step 1 is sent, so S3 verifies the object against *our*
       digest;
    3. afterwards ``HeadObject(ChecksumMode='ENABLED')`` must report the expected size, the
       ``sha256`` user metadata, and the SHA-256 checksum: the whole-object digest for a single
       PUT, or for a multipart upload the *composite* checksum (SHA-256 of the concatenated
       part digests, reported as ``<base64>-<parts>``). A mismatch deletes the object and
       raises :class:`IntegrityError`.

Reads: ``get_bytes`` and ``open_stream`` check the content against the recorded ``sha256``.
botocore also validates a GET's whole-object flexible checksum by default; for an
S3-compatible store that misreports checksums, set ``AWS_RESPONSE_CHECKSUM_VALIDATION=
when_required`` (a standard botocore setting) - the ``sha256`` check still applies.

Failures: botocore retries each request (``retry_mode`` standard/adaptive, ``max_attempts``
per request, covering 5xx, throttling and connection errors). Whole operations are retried on
top of that with tenacity (``op_attempts``), which covers what botocore cannot: a transfer that
failed as a whole, or a response body cut off mid-stream. A failed multipart upload is aborted
(by s3transfer, and again by this store for every upload id it saw created), so it neither
becomes visible under the key nor lingers as hidden billed parts; a bucket lifecycle rule
``AbortIncompleteMultipartUpload`` remains the backstop for a process killed mid-upload.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import contextlib
import hashlib
import io
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import boto3
import botocore.config
from boto3.s3.transfer import TransferConfig, create_transfer_manager
from botocore import exceptions as bex
from s3transfer.utils import ChunksizeAdjuster
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

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
    AccessDenied,
    IntegrityError,
    InvalidRange,
    InvalidRequest,
    ObjectNotFound,
    StoreConfigError,
    StoreError,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import HeadObjectOutputTypeDef
    from s3transfer.manager import TransferManager

__all__ = ["S3Options", "S3Store", "parse_s3_uri"]

log = logging.getLogger(__name__)

T = TypeVar("T")

MiB = 1024 * 1024
#: S3's minimum size of every part but the last.
S3_MIN_PART_SIZE = 5 * MiB
#: S3's maximum part size.
S3_MAX_PART_SIZE = 5 * 1024 * MiB

_BUCKET_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,253}[A-Za-z0-9]")

# Error codes, grouped by what the caller should do about them.
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NotFound", "404", "NoSuchVersion"})
_ACCESS_CODES = frozenset(
    {
        "AccessDenied",
        "403",
        "Forbidden",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "AllAccessDisabled",
        "AccountProblem",
        "KMS.AccessDeniedException",
    }
)
_INTEGRITY_CODES = frozenset(
    {"BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch", "InvalidChecksum"}
)
_TRANSIENT_CODES = frozenset(
    {
        "InternalError",
        "ServiceUnavailable",
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestTimeout",
        "RequestTimeTooSkewed",
        "TooManyRequests",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
    }
)


# HTTP statuses that mean "try again later": throttling and server-side failures.
_RETRY_STATUS = frozenset({429, *range(500, 600)})


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket[/prefix]`` -> ``(bucket, prefix)`` with the prefix free of edge slashes."""
    parts = urlsplit(uri)
    if parts.scheme != "s3":
        raise StoreConfigError(f"not an s3:// URI: {uri!r}")
    if parts.query or parts.fragment:
        raise StoreConfigError(f"S3 URI {uri!r} has a query or fragment")
    bucket = parts.netloc
    if not _BUCKET_RE.fullmatch(bucket) or ".." in bucket:
        raise StoreConfigError(
            f"S3 URI {uri!r} does not name a valid bucket",
            hint="Use s3://bucket-name/optional/prefix",
        )
    prefix = parts.path.strip("/")
    if prefix:
        try:
            validate_prefix(prefix)
        except InvalidRequest as exc:
            raise StoreConfigError(
                f"S3 URI {uri!r} has an invalid prefix: {exc.message}",
                hint="Prefix segments follow the key rules (no '.', '..', empty segments)",
            ) from exc
    return bucket, prefix


class _KeyExists(StoreError):
    """A conditional write found the key already there (HTTP 412 to ``If-None-Match: *``)."""


@dataclass(frozen=True, slots=True, repr=False)
class S3Options:
    """Tunables of :class:`S3Store` (all optional; credentials are deliberately absent).

    Attributes:
        endpoint_url: S3-compatible endpoint; default from ``AWS_ENDPOINT_URL[_S3]`` or AWS.
        region: signing region; default ``AWS_REGION``, then the session's (AWS_DEFAULT_REGION,
            profile).
        profile: named profile; default ``AWS_PROFILE``.
        addressing_style: ``path``/``virtual``/``auto``; default ``path`` with a custom
            endpoint, ``auto`` on AWS.
        sse: server-side encryption for every write: ``AES256`` or ``aws:kms``.
        sse_kms_key_id: KMS key id/ARN/alias (only with ``sse='aws:kms'``).
        multipart_threshold: files at least this large are uploaded in parts.
        multipart_chunksize: part size (>= 5 MiB; raised automatically for huge files so that
            there are at most 10,000 parts).
        max_concurrency: parallel part uploads per file.
        retry_mode / max_attempts: botocore per-request retries (attempts include the first).
        op_attempts: tenacity attempts of a whole operation (upload, get, head, ...).
        retry_initial_delay / retry_max_delay: tenacity backoff between whole-operation attempts.
        list_page_size: ``MaxKeys`` per ListObjectsV2 page (1..1000).
        connect_timeout / read_timeout: socket timeouts in seconds.
        require_store_checksum: fail uploads when the store returns no SHA-256 checksum (turn
            off only for S3-compatible stores without flexible-checksum support; size and
            metadata are still checked).
    """

    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None
    addressing_style: Literal["auto", "path", "virtual"] | None = None
    sse: Literal["AES256", "aws:kms"] | None = None
    sse_kms_key_id: str | None = None
    multipart_threshold: int = 64 * MiB
    multipart_chunksize: int = 64 * MiB
    max_concurrency: int = 8
    retry_mode: Literal["standard", "adaptive"] = "standard"
    max_attempts: int = 5
    op_attempts: int = 3
    retry_initial_delay: float = 0.5
    retry_max_delay: float = 10.0
    list_page_size: int = 1000
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    require_store_checksum: bool = True

    def __repr__(self) -> str:
        # An endpoint URL may carry user:password@; never show it.
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["endpoint_url"] = _redact_url(self.endpoint_url)
        shown = ", ".join(f"{name}={value!r}" for name, value in values.items())
        return f"S3Options({shown})"

    def __post_init__(self) -> None:
        def bad(message: str) -> StoreConfigError:
            return StoreConfigError(f"invalid S3 option: {message}")

        if self.addressing_style not in (None, "auto", "path", "virtual"):
            raise bad(f"addressing_style={self.addressing_style!r} (use path, virtual or auto)")
        if self.sse not in (None, "AES256", "aws:kms"):
            raise bad(f"sse={self.sse!r} (use 'AES256' or 'aws:kms')")
        if self.sse_kms_key_id is not None and self.sse != "aws:kms":
            raise bad("sse_kms_key_id needs sse='aws:kms'")
        if self.retry_mode not in ("standard", "adaptive"):
            raise bad(f"retry_mode={self.retry_mode!r} (use 'standard' or 'adaptive')")
        if not S3_MIN_PART_SIZE <= self.multipart_chunksize <= S3_MAX_PART_SIZE:
            raise bad(
                f"multipart_chunksize={self.multipart_chunksize} must be between "
                f"{S3_MIN_PART_SIZE} (5 MiB) and {S3_MAX_PART_SIZE} (5 GiB)"
            )
        for name in ("multipart_threshold", "max_concurrency", "max_attempts", "op_attempts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad(f"{name}={value!r} must be a positive int")
        if not 1 <= self.list_page_size <= 1000:
            raise bad(f"list_page_size={self.list_page_size} must be between 1 and 1000")
        for name in ("retry_initial_delay", "retry_max_delay", "connect_timeout", "read_timeout"):
            if getattr(self, name) < 0:
                raise bad(f"{name} must not be negative")
        if self.endpoint_url is not None:
            _check_endpoint(self.endpoint_url, "endpoint_url")


def _check_endpoint(url: str, source: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StoreConfigError(f"invalid S3 option: {source} must be an http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        # botocore would log such a URL verbatim at DEBUG level: refuse it outright.
        raise StoreConfigError(
            f"{source} must not contain credentials (user:password@)",
            hint="Put credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or a profile",
        )


def _redact_url(url: str | None) -> str | None:
    """Drop any user:password@ part of a URL before it is shown anywhere."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


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
        self._lock = threading.Lock()
        self._watched: dict[str, builtins.list[builtins.list[str]]] = {}
        self._transfer: TransferManager | None = None
        self._adjuster = ChunksizeAdjuster()
        self._client = self._make_client(session)
        self._endpoint = _redact_url(self._client.meta.endpoint_url)
        # Remember every multipart upload created for a key being written, so a failed put can
        # abort it even when s3transfer's own cleanup could not.
        self._client.meta.events.register(
            "after-call.s3.CreateMultipartUpload", self._on_create_multipart_upload
        )
        # Keys being written by put_if_absent: their PutObject / CompleteMultipartUpload carry
        # If-None-Match: * (S3's conditional write), so of writers racing on an absent key
        # exactly one creates it. s3transfer does not pass IfNoneMatch through its extra_args,
        # hence the parameter is added here, on the way into botocore.
        self._exclusive: dict[str, int] = {}
        for op in ("PutObject", "CompleteMultipartUpload"):
            self._client.meta.events.register(
                f"before-parameter-build.s3.{op}", self._add_if_none_match
            )

    def _make_client(self, session: boto3.session.Session | None) -> S3Client:
        opts = self._opts
        try:
            session = session or boto3.session.Session(profile_name=opts.profile)
        except bex.ProfileNotFound as exc:
            raise StoreConfigError(
                f"AWS profile not found: {exc}",
                uri=self._uri,
                hint="Check AWS_PROFILE / the profile option and ~/.aws/config",
            ) from exc
        region = opts.region or os.environ.get("AWS_REGION") or session.region_name
        custom_endpoint = (
            opts.endpoint_url
            or os.environ.get("AWS_ENDPOINT_URL_S3")
            or os.environ.get("AWS_ENDPOINT_URL")
        )
        for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
            if os.environ.get(var):
                _check_endpoint(os.environ[var], var)
        style: Literal["auto", "path", "virtual"] = opts.addressing_style or (
            "path" if custom_endpoint else "auto"
        )

        def build(addressing_style: Literal["auto", "path", "virtual"]) -> S3Client:
            config = botocore.config.Config(
                region_name=region,
                retries={"mode": opts.retry_mode, "total_max_attempts": opts.max_attempts},
                s3={"addressing_style": addressing_style},
                connect_timeout=opts.connect_timeout,
                read_timeout=opts.read_timeout,
                max_pool_connections=max(10, opts.max_concurrency + 2),
                user_agent_extra="kafka-archive",
            )
            client: S3Client = session.client("s3", endpoint_url=opts.endpoint_url, config=config)
            return client

        client = build(style)
        if opts.addressing_style is None and style == "auto":
            # An endpoint may also come from the profile's config file (endpoint_url); only the
            # built client knows. S3-compatible stores want path-style addressing.
            host = urlsplit(client.meta.endpoint_url).hostname or ""
            if not host.endswith((".amazonaws.com", ".amazonaws.com.cn")):
                _check_endpoint(client.meta.endpoint_url, "the configured endpoint_url")
                client.close()
                client = build("path")
        return client

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

    # a flat table of botocore error codes onto the StoreError tree; read as one list
    def _translate(self, exc: BaseException, op: str, key: str | None) -> StoreError:  # noqa: C901, PLR0912
        """Map a backend exception onto the StoreError tree (never including credentials)."""
        if isinstance(exc, StoreError):
            return exc
        where: dict[str, Any] = {"uri": self._uri, "key": key}
        if isinstance(exc, bex.ClientError):
            error = exc.response.get("Error", {})
            meta = exc.response.get("ResponseMetadata", {})
            code = str(error.get("Code") or "")
            status = meta.get("HTTPStatusCode")
            detail = f"{op} failed: {code or 'HTTP ' + str(status)}"
            if error.get("Message"):
                detail += f" ({error['Message']})"
            if meta.get("RequestId"):
                detail += f" [request id {meta['RequestId']}]"
            if code == "NoSuchUpload":
                # A multipart upload vanished under us: typically a CompleteMultipartUpload that
                # succeeded but whose response was lost, then retried. Redo the whole upload.
                return StoreUnavailable(
                    f"{detail}; the multipart upload was completed or aborted by an earlier "
                    "attempt",
                    **where,
                )
            if code == "PreconditionFailed" or status == 412:
                # only put_if_absent's conditional writes send a precondition
                return _KeyExists(f"{detail}; the key exists", **where)
            if code == "NoSuchBucket":
                return StoreConfigError(
                    detail, hint=f"Create bucket {self._bucket!r} or fix the store URI", **where
                )
            if code in _NOT_FOUND_CODES or status == 404:
                return ObjectNotFound(detail, **where)
            if code in _ACCESS_CODES or status == 403:
                return AccessDenied(detail, **where)
            if code == "InvalidRange" or status == 416:
                return InvalidRange(detail, **where)
            if code in _INTEGRITY_CODES:
                return IntegrityError(detail, **where)
            if code in _TRANSIENT_CODES or (status is not None and status in _RETRY_STATUS):
                return StoreUnavailable(
                    f"{detail}; each request was tried {self._opts.max_attempts} times", **where
                )
            return StoreError(
                detail, hint="See the error code in the S3 documentation for the cause", **where
            )
        if isinstance(
            exc, bex.NoCredentialsError | bex.PartialCredentialsError | bex.CredentialRetrievalError
        ):
            return AccessDenied(f"{op} failed: no usable AWS credentials ({exc})", **where)
        if isinstance(exc, bex.FlexibleChecksumError | bex.ChecksumError):
            return IntegrityError(f"{op} failed: the response failed its checksum ({exc})", **where)
        if isinstance(exc, bex.EndpointConnectionError | bex.ConnectTimeoutError):
            return StoreUnavailable(
                f"{op} failed: could not connect to the S3 endpoint {self._endpoint} "
                f"(tried {self._opts.max_attempts} times)",
                hint=(
                    "Check the endpoint URL (endpoint_url / AWS_ENDPOINT_URL), DNS, proxies and "
                    "firewalls, and that the store is up; then retry"
                ),
                **where,
            )
        if isinstance(
            exc,
            bex.ConnectionError
            | bex.HTTPClientError
            | bex.IncompleteReadError
            | ConnectionError
            | TimeoutError,
        ):
            return StoreUnavailable(
                f"{op} failed: {type(exc).__name__}: {exc} "
                f"(each request was tried {self._opts.max_attempts} times)",
                **where,
            )
        if isinstance(exc, OSError):
            return StoreError(f"{op} failed: {exc.strerror or exc}", **where)
        return StoreError(f"{op} failed: unexpected {type(exc).__name__}: {exc}", **where)

    def _retrying(self, op: str, key: str | None, fn: Callable[[], T]) -> T:
        """Run ``fn`` with whole-operation retries on :class:`StoreUnavailable`."""
        opts = self._opts

        def log_retry(state: RetryCallState) -> None:
            outcome = state.outcome
            err = outcome.exception() if outcome is not None else None
            delay = state.next_action.sleep if state.next_action is not None else 0.0
            log.warning(
                "%s of %s failed (%s); retrying in %.2fs (attempt %d of %d)",
                op,
                key if key is not None else self._uri,
                err,
                delay,
                state.attempt_number + 1,
                opts.op_attempts,
            )

        retryer = Retrying(
            stop=stop_after_attempt(opts.op_attempts),
            # Exponential backoff plus up to one initial delay of jitter (spreads out writers
            # that failed together); written with primitives that every tenacity >= 8 has.
            wait=wait_exponential(multiplier=opts.retry_initial_delay, max=opts.retry_max_delay)
            + wait_random(0, opts.retry_initial_delay),
            retry=retry_if_exception_type(StoreUnavailable),
            before_sleep=log_retry,
            reraise=True,
        )
        try:
            return retryer(fn)
        except StoreUnavailable as exc:
            if opts.op_attempts == 1:
                raise
            raise StoreUnavailable(
                f"{exc.message}; gave up after {opts.op_attempts} attempts of the whole {op}",
                uri=exc.uri,
                key=exc.key,
                hint=exc.hint,
            ) from exc

    # ------------------------------------------------------------------ multipart bookkeeping

    def _on_create_multipart_upload(self, parsed: Mapping[str, Any], **_: Any) -> None:
        key, upload_id = parsed.get("Key"), parsed.get("UploadId")
        if not key or not upload_id:
            return
        with self._lock:
            for ids in self._watched.get(key, ()):
                ids.append(upload_id)

    @contextlib.contextmanager
    def _watch_uploads(self, full_key: str) -> Iterator[builtins.list[str]]:
        ids: builtins.list[str] = []
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

    def _abort_uploads(self, full_key: str, upload_ids: builtins.list[str]) -> None:
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

    # ------------------------------------------------------------------ writes

    def _upload_once(
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
        part_size = (
            self._adjuster.adjust_chunksize(self._opts.multipart_chunksize, size)
            if multipart
            else None
        )
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
        self._retrying("upload", key, lambda: self._upload_once(full_key, key, source, extra))
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
        problems: builtins.list[str] = []
        if head.get("ContentLength") != digest.size:
            problems.append(f"stored size {head.get('ContentLength')} != source size {digest.size}")
        recorded = head.get("Metadata", {}).get(META_SHA256)
        if recorded != digest.sha256_hex:
            problems.append(f"recorded sha256 {recorded} != source sha256 {digest.sha256_hex}")
        checksum = head.get("ChecksumSHA256")
        if checksum is None:
            if self._opts.require_store_checksum:
                problems.append(
                    "the store returned no SHA-256 checksum (set require_store_checksum=False "
                    "only for S3-compatible stores without flexible-checksum support)"
                )
        else:
            value, dash, count = checksum.partition("-")
            if multipart:
                want = digest.composite_b64
                if dash and count != str(len(digest.part_sha256)):
                    problems.append(
                        f"store reports {count} parts, source has {len(digest.part_sha256)}"
                    )
            else:
                want = digest.sha256_b64
                if dash:
                    problems.append(f"store reports a {count}-part object for a single PUT")
            if value != want:
                problems.append(f"store checksum {value} != source checksum {want}")
        checksum_type = head.get("ChecksumType")
        want_type = "COMPOSITE" if multipart else "FULL_OBJECT"
        if checksum_type is not None and checksum_type != want_type:
            problems.append(f"store checksum type {checksum_type}, expected {want_type}")
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
            full_key = self._full(key)
            with self._lock:
                self._exclusive[full_key] = self._exclusive.get(full_key, 0) + 1
            try:
                obj = self._put(
                    key, payload if payload is not None else os.fspath(source), sha256, metadata
                )
                return obj, True
            except _KeyExists:
                pass  # another writer created it between our head and our write
            finally:
                with self._lock:
                    self._exclusive[full_key] -= 1
                    if not self._exclusive[full_key]:
                        del self._exclusive[full_key]
        return put_if_absent_impl(self, key, source, sha256=sha256, metadata=metadata)

    def _add_if_none_match(self, params: dict[str, Any], **_: Any) -> None:
        with self._lock:
            exclusive = params.get("Key") in self._exclusive
        if exclusive:
            params["IfNoneMatch"] = "*"

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
        whole = _whole_object_sha256(head)
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
        with self._lock:
            transfer, self._transfer = self._transfer, None
        if transfer is not None:
            transfer.shutdown()
        self._client.close()

    def __enter__(self) -> S3Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _b64_to_hex(value: str) -> str:
    try:
        raw = base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError(str(exc)) from exc
    if len(raw) != hashlib.sha256().digest_size:
        raise ValueError("not a SHA-256 digest")
    return raw.hex()


_MULTIPART_ETAG = re.compile(r'"?[0-9a-fA-F]+-\d+"?')


def _whole_object_sha256(head: HeadObjectOutputTypeDef) -> str | None:
    """The object's SHA-256 (hex) if the store's checksum is a whole-object one, else None.

    A multipart object's checksum is composite - not the content's SHA-256. S3 marks it with a
    ``-N`` suffix and ``ChecksumType: COMPOSITE``; some S3-compatible stores (and moto) omit
    both from HeadObject, so a multipart ETag (``<md5>-N``) is taken as a sign of it too.
    """
    checksum = head.get("ChecksumSHA256")
    if checksum is None or "-" in checksum:
        return None
    checksum_type = head.get("ChecksumType")
    if checksum_type == "COMPOSITE":
        return None
    if checksum_type is None and _MULTIPART_ETAG.fullmatch(head.get("ETag", "")):
        return None
    try:
        return _b64_to_hex(checksum)
    except ValueError:
        return None
