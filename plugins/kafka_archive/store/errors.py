"""The typed errors of the object-store layer.

Every failure an :class:`~kafka_archive.store.base.ObjectStore` reports is a :class:`StoreError`.
Backend exceptions (botocore, ``OSError``) are translated at the store boundary, so callers never
need to import boto3 to handle a missing object or an outage. Each error names the store URI and
the key involved and carries a ``hint``: one sentence on what the operator should do next.

Contract:
    * :class:`ObjectNotFound` - the key does not exist. Not retried.
    * :class:`IntegrityError` - bytes do not match an expected SHA-256 / size, or the store's own
      checksum disagrees with what was sent. The object is never left visible under the key when
      a *write* fails this way. Not retried automatically (a source that changes under us would
      fail again); the caller decides.
    * :class:`StoreUnavailable` - a transient-looking failure (connection refused/reset, timeout,
      HTTP 5xx, throttling) that persisted through every configured retry.
    * :class:`AccessDenied` - credentials missing, wrong, expired or lacking permission.
    * :class:`StoreConfigError` - a bad URI or option (also a :class:`ValueError`).
    * :class:`InvalidRequest` - a bad argument such as an unsafe key (:class:`InvalidKey`) or a
      byte range outside the object (:class:`InvalidRange`); also a :class:`ValueError`.

Messages never contain credentials: they are built only from the URI, the key, the operation
and the backend's error code/message, and all of these pass through
:func:`kafka_archive.redact.redact_text` on the way in (a URI with userinfo, a backend message
echoing a signed header or a known secret value cannot leak through ``str()``, ``to_dict()`` or
a log line).
"""

from __future__ import annotations

from typing import Any, ClassVar

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.redact import redact_text

__all__ = [
    "AccessDenied",
    "IntegrityError",
    "InvalidKey",
    "InvalidRange",
    "InvalidRequest",
    "ObjectNotFound",
    "StoreConfigError",
    "StoreError",
    "StoreUnavailable",
]


class StoreError(KafkaArchiveError):
    """Base of every object-store failure.

    Attributes:
        message: what went wrong.
        uri: the store's URI (``s3://bucket/prefix`` or ``file:///dir``), if known.
        key: the object key involved, if any.
        hint: what to do next (defaults to the class's ``default_hint``).
    """

    default_hint: ClassVar[str | None] = ""
    http_status = 502
    api_error = "store_unavailable"

    def __init__(
        self,
        message: str,
        *,
        uri: str | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.uri = None if uri is None else redact_text(uri)
        self.key = key
        super().__init__(
            redact_text(message), hint=self.default_hint if hint is None else redact_text(hint)
        )
        self.args = (self._render(),)  # str(): the store, the key, the message and the hint

    def _render(self) -> str:
        where = self.uri or "<store>"
        if self.key is not None:
            where = f"{where} key {self.key!r}"
        text = f"{where}: {self.message}"
        if self.hint:
            text += f". {self.hint}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (for ``--json`` CLIs and task reports)."""
        return {
            "error": type(self).__name__,
            "uri": self.uri,
            "key": self.key,
            "message": self.message,
            "hint": self.hint,
        }


class ObjectNotFound(StoreError):
    """The key does not exist in the store."""

    default_hint = (
        "Check the key and the store URI (bucket and prefix); list the prefix to see what exists"
    )


class IntegrityError(StoreError):
    """Bytes do not match the expected checksum or size."""

    default_hint = (
        "Do not trust this object; re-upload it from a known-good source, or if reading, retry "
        "the read and restore from another copy if it keeps failing"
    )


class StoreUnavailable(StoreError):
    """The store could not be reached or kept failing transiently through all retries."""

    default_hint = (
        "Check that the endpoint is reachable and healthy, then run the operation again; "
        "raise max_attempts/op_attempts if the store is known to be flaky"
    )


class AccessDenied(StoreError):
    """Credentials are missing, invalid, expired or lack permission for the operation."""

    default_hint = (
        "Check the credentials in the environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / "
        "AWS_SESSION_TOKEN or AWS_PROFILE) and that they grant s3:GetObject, s3:PutObject, "
        "s3:ListBucket, s3:DeleteObject and s3:AbortMultipartUpload on the bucket"
    )


class StoreConfigError(StoreError, ValueError):
    """The store URI or an option is invalid."""

    default_hint = "Fix the store URI or options (see kafka_archive.store.open_store)"


class InvalidRequest(StoreError, ValueError):
    """An argument of the call is invalid (bad key, range, checksum or metadata)."""


class InvalidKey(InvalidRequest):
    """A key is not a safe relative '/'-separated path."""

    default_hint = (
        "Keys are relative '/'-separated paths without empty, '.' or '..' segments, "
        "backslashes or control characters"
    )


class InvalidRange(InvalidRequest):
    """A byte range lies (partly) outside the object."""

    default_hint = "Ask for a range inside the object; use head() to learn its size"
