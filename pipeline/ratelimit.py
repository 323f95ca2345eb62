"""A requests-per-minute limit for LLM endpoints (a thread-safe pacer with an injectable clock).

Why pacing rather than a sliding-window counter: a provider's "N requests per minute" is a
quota the client must not exceed in any minute; spacing requests at least 60 / N seconds apart
guarantees that (at most N + 1 requests start within any 60 s), needs no history, and spreads
concurrent workers evenly instead of letting them burst and then all wait. Each HTTP attempt
(retries included) takes one slot: retries count against a provider's quota too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

SECONDS_PER_MINUTE = 60.0


class RateLimiter:
    """``acquire()`` blocks until the caller may send its request; slots are ``60 / rpm`` apart.

    ``clock`` and ``sleep`` default to ``time.monotonic`` / ``time.sleep``; tests pass a fake clock
    so the schedule is checked by counting, never by measuring wall time.
    """

    def __init__(
        self,
        requests_per_minute: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if requests_per_minute <= 0:
            raise ValueError(f"requests_per_minute must be > 0 (got {requests_per_minute})")
        self.interval = SECONDS_PER_MINUTE / requests_per_minute
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._next_free: float | None = None
        self.acquired = 0  # requests let through (for metadata and tests)
        self.waited_s = 0.0  # total time callers were told to wait

    def reserve(self) -> float:
        """Book the next slot; returns how long the caller must wait before sending (>= 0)."""
        with self._lock:
            now = self._clock()
            slot = now if self._next_free is None else max(now, self._next_free)
            self._next_free = slot + self.interval
            self.acquired += 1
            wait = slot - now
            self.waited_s += wait
            return wait

    def acquire(self) -> float:
        """Wait for the next slot (outside the lock, so other threads can book theirs)."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait
