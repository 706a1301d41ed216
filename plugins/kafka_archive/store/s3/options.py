"""What an S3 store is configured with: the ``s3://bucket/prefix`` URI and :class:`S3Options`.

Contract: :func:`parse_s3_uri` and :class:`S3Options` validate eagerly and report every bad
value as :class:`~kafka_archive.store.errors.StoreConfigError`; credentials are never options,
and an endpoint URL carrying ``user:password@`` is refused (:func:`check_endpoint`) and never
shown (:func:`redact_url`). Nothing here talks to S3 or imports boto3.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from kafka_archive.store.base import validate_prefix
from kafka_archive.store.errors import InvalidRequest, StoreConfigError

__all__ = [
    "S3_MAX_PART_SIZE",
    "S3_MIN_PART_SIZE",
    "MiB",
    "S3Options",
    "check_endpoint",
    "parse_s3_uri",
    "redact_url",
]

MiB = 1024 * 1024
#: S3's minimum size of every part but the last.
S3_MIN_PART_SIZE = 5 * MiB
#: S3's maximum part size.
S3_MAX_PART_SIZE = 5 * 1024 * MiB

_BUCKET_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,253}[A-Za-z0-9]")


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
        values["endpoint_url"] = redact_url(self.endpoint_url)
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
            check_endpoint(self.endpoint_url, "endpoint_url")


def check_endpoint(url: str, source: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StoreConfigError(f"invalid S3 option: {source} must be an http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        # botocore would log such a URL verbatim at DEBUG level: refuse it outright.
        raise StoreConfigError(
            f"{source} must not contain credentials (user:password@)",
            hint="Put credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or a profile",
        )


def redact_url(url: str | None) -> str | None:
    """Drop any user:password@ part of a URL before it is shown anywhere."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
