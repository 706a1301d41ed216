"""The CLI's one mapping of typed errors to a clean exit (the CLI boundary).

A :class:`~kafka_archive.errors.KafkaArchiveError` is reported with its own message (``str()``),
``hint`` and ``exit_code``; an error of :mod:`segment_lib` (which knows nothing of the platform)
with its message, the caller's hint on what to do about damaged bytes, and its ``to_dict()``.
Commands call :func:`fail_error` where they catch one; the root command's last-resort handler
(:mod:`kafka_archive.cli.crash`) asks :func:`is_user_error` for what escaped. An ``internal``
platform error (control flow that escaped) is no user-facing failure: it is re-raised (a bug).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from kafka_archive.cli.output import fail
from kafka_archive.errors import KafkaArchiveError

if TYPE_CHECKING:
    from segment_lib.errors import SegmentError

__all__ = ["fail_error", "is_user_error"]


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a typed, user-facing error: a platform error that is not
    ``internal``, or an error of segment_lib (bad bytes, named by position)."""
    if isinstance(exc, KafkaArchiveError):
        return not exc.internal
    from segment_lib.errors import SegmentError

    return isinstance(exc, SegmentError)


def fail_error(
    exc: KafkaArchiveError | SegmentError,
    *,
    as_json: bool,
    hint: str | None = None,
    details: dict[str, Any] | None = None,
) -> NoReturn:
    """Exit cleanly for ``exc``: ``error: <str(exc)>`` and its hint (or one JSON error object
    with ``details``), with the error's exit code (1 for segment_lib's). ``hint`` replaces the
    error's own (a segment_lib error has none: the caller says what to do about the bytes);
    a segment_lib error's JSON also carries its ``to_dict()``. Re-raises an ``internal`` one."""
    if isinstance(exc, KafkaArchiveError):
        if exc.internal:
            raise exc
        # a store error's str() ends with its hint: said once, on its own line
        text = str(exc).removesuffix(f". {exc.hint}") if exc.hint else str(exc)
        fail(
            text,
            hint=hint if hint is not None else (exc.hint or None),
            code=exc.exit_code,
            as_json=as_json,
            details=details,
        )
    fail(str(exc), hint=hint, as_json=as_json, details={**exc.to_dict(), **(details or {})})
