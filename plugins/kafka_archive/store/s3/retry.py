"""Whole-operation retries of the S3 store, on top of botocore's per-request ones.

Contract: :func:`retrying` runs one operation (an upload, a get, a head, ...) up to
``S3Options.op_attempts`` times with exponential backoff plus jitter, retrying only on
:class:`~kafka_archive.store.errors.StoreUnavailable` (what botocore cannot retry itself: a
transfer that failed as a whole, a body cut off mid-stream); each retry is logged as a
warning, and the final failure says how many attempts were made.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from kafka_archive.store.errors import StoreUnavailable
from kafka_archive.store.s3.options import S3Options

__all__ = ["retrying"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def retrying(op: str, key: str | None, fn: Callable[[], T], *, opts: S3Options, uri: str) -> T:
    """Run ``fn`` with whole-operation retries on :class:`StoreUnavailable`."""

    def log_retry(state: RetryCallState) -> None:
        outcome = state.outcome
        err = outcome.exception() if outcome is not None else None
        delay = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning(
            "%s of %s failed (%s); retrying in %.2fs (attempt %d of %d)",
            op,
            key if key is not None else uri,
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
