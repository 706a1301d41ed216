"""A token bucket limiting a replay's send rate in records/s and/or bytes/s.

Each limit is a bucket refilled continuously at its rate and holding at most one second of
tokens (so a pause never turns into a burst longer than a second). :meth:`RateLimiter.acquire`
takes ``records`` and ``nbytes`` tokens, sleeping until both buckets hold enough; callers
acquire per source batch, not per record, to keep the limiter off the per-record path. A
request larger than a bucket's capacity is allowed to drive the bucket negative (the debt is
paid by waiting), so huge batches are throttled rather than refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["RateLimiter", "TokenBucket"]


class TokenBucket:
    """Tokens refilled at ``rate`` per second up to ``capacity`` (default one second's worth)."""

    __slots__ = ("_clock", "_last", "capacity", "rate", "tokens")

    def __init__(
        self,
        rate: float,
        capacity: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.capacity = rate if capacity is None else capacity
        self.tokens = self.capacity
        self._clock = clock
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.capacity, self.tokens + (now - self._last) * self.rate)
        self._last = now

    def take(self, amount: float) -> float:
        """Take ``amount`` tokens; return the seconds to wait before the debt is paid."""
        self._refill()
        self.tokens -= amount
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate


class RateLimiter:
    """Records/s and bytes/s limits (either may be ``None``)."""

    def __init__(
        self,
        records_per_s: float | None = None,
        bytes_per_s: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.records = TokenBucket(records_per_s, clock=clock) if records_per_s else None
        self.bytes = TokenBucket(bytes_per_s, clock=clock) if bytes_per_s else None
        self._sleep = sleep
        #: total seconds spent waiting (reported)
        self.waited = 0.0

    @property
    def active(self) -> bool:
        return self.records is not None or self.bytes is not None

    def acquire(self, records: int, nbytes: int) -> None:
        """Block until ``records`` and ``nbytes`` may be sent."""
        wait = 0.0
        if self.records is not None:
            wait = max(wait, self.records.take(records))
        if self.bytes is not None:
            wait = max(wait, self.bytes.take(nbytes))
        if wait > 0:
            self.waited += wait
            self._sleep(wait)
