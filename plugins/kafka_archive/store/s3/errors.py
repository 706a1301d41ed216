"""How S3 and botocore failures become the store's errors (:mod:`kafka_archive.store.errors`).

Contract: :class:`ErrorTranslator` maps any exception raised by boto3/botocore/s3transfer onto
the :class:`~kafka_archive.store.errors.StoreError` tree - by S3 error code first, then by HTTP
status, then by exception type - with a message naming the operation, the code and the request
id, and never a credential. :class:`~kafka_archive.store.errors.StoreUnavailable` (and only
it) means "worth retrying the whole operation". :class:`KeyExists` is internal to the
conditional writes of ``put_if_absent`` (HTTP 412 to ``If-None-Match: *``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore import exceptions as bex

from kafka_archive.store.errors import (
    AccessDenied,
    IntegrityError,
    InvalidRange,
    ObjectNotFound,
    StoreConfigError,
    StoreError,
    StoreUnavailable,
)

__all__ = ["ErrorTranslator", "KeyExists"]

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


class KeyExists(StoreError):
    """A conditional write found the key already there (HTTP 412 to ``If-None-Match: *``)."""


@dataclass(frozen=True, slots=True)
class ErrorTranslator:
    """Maps a backend exception onto the StoreError tree for one store.

    Attributes:
        uri: the store's URI (put in every error).
        bucket: the bucket (named in the hint of ``NoSuchBucket``).
        endpoint: the endpoint URL, already redacted (named when it cannot be reached).
        max_attempts: botocore's per-request attempts (named when they were all used up).
    """

    uri: str
    bucket: str
    endpoint: str | None
    max_attempts: int

    def __call__(self, exc: BaseException, op: str, key: str | None) -> StoreError:
        """Map a backend exception onto the StoreError tree (never including credentials)."""
        if isinstance(exc, StoreError):
            return exc
        where: dict[str, Any] = {"uri": self.uri, "key": key}
        if isinstance(exc, bex.ClientError):
            return self._client_error(exc, op, where)
        return self._other_error(exc, op, where)

    def _client_error(self, exc: bex.ClientError, op: str, where: dict[str, Any]) -> StoreError:
        """An error response from S3: by error code, then by HTTP status."""
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
                f"{detail}; the multipart upload was completed or aborted by an earlier attempt",
                **where,
            )
        if code == "PreconditionFailed" or status == 412:
            # only put_if_absent's conditional writes send a precondition
            return KeyExists(f"{detail}; the key exists", **where)
        if code == "NoSuchBucket":
            return StoreConfigError(
                detail, hint=f"Create bucket {self.bucket!r} or fix the store URI", **where
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
                f"{detail}; each request was tried {self.max_attempts} times", **where
            )
        return StoreError(
            detail, hint="See the error code in the S3 documentation for the cause", **where
        )

    def _other_error(self, exc: BaseException, op: str, where: dict[str, Any]) -> StoreError:
        """No response from S3: credentials, checksums, connections, the local filesystem."""
        if isinstance(
            exc, bex.NoCredentialsError | bex.PartialCredentialsError | bex.CredentialRetrievalError
        ):
            return AccessDenied(f"{op} failed: no usable AWS credentials ({exc})", **where)
        if isinstance(exc, bex.FlexibleChecksumError | bex.ChecksumError):
            return IntegrityError(f"{op} failed: the response failed its checksum ({exc})", **where)
        if isinstance(exc, bex.EndpointConnectionError | bex.ConnectTimeoutError):
            return StoreUnavailable(
                f"{op} failed: could not connect to the S3 endpoint {self.endpoint} "
                f"(tried {self.max_attempts} times)",
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
                f"(each request was tried {self.max_attempts} times)",
                **where,
            )
        if isinstance(exc, OSError):
            return StoreError(f"{op} failed: {exc.strerror or exc}", **where)
        return StoreError(f"{op} failed: unexpected {type(exc).__name__}: {exc}", **where)
