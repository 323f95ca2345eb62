"""Requests-per-minute and tokens-per-minute limits for an LLM endpoint, shared across runs.

Why a sliding-window log and not pacing: providers cap both requests and tokens per minute, and
a token limit cannot be paced without knowing each request's size. The log holds one entry per
request sent in the last window (grant time, tokens); a request is let through only when the
window after it holds at most ``rpm`` requests and ``tpm`` tokens, so the limits hold exactly in
every window of the client's clock, with bursts allowed up to the limit (32 workers start at once).

Why a file: concurrent runs of one config (a backfill split into runs, two CLI runs) are separate
processes on one API key, so they must share one budget. The log lives in a small binary file
under the results folder, read and rewritten under an exclusive ``flock``; without a path the log
is kept in memory (one process). Time is ``time.time`` (comparable across processes), injectable
with ``sleep`` so tests count the schedule instead of timing it.

Tokens: a request reserves an upper bound before it is sent (prompt tokens by the pinned
``regex_word_punct`` count plus its ``max_tokens``) and is settled to the usage the endpoint
reports once it answers, so the window holds what was really spent. Each HTTP attempt (retries
included) takes one entry: retries count against a provider's quota too. An entry is dated again
when its answer (or error) is back, so it stays in the client's window at least as long as in the
server's whatever the network delays; ``margin_s`` widens the window a little more.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.core.tokens import count_tokens

SECONDS_PER_MINUTE = 60.0
MARGIN_S = 0.25
_FIELDS = 3  # (grant time, tokens, ticket) per entry, float64
_MIN_WAIT_S = 0.001


@dataclass(frozen=True)
class Limits:
    """A provider's quota: requests and tokens per window (None = not limited)."""

    rpm: float | None = None
    tpm: float | None = None
    window_s: float = SECONDS_PER_MINUTE

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0 (got {value})")
        if self.window_s <= 0:
            raise ValueError(f"window_s must be > 0 (got {self.window_s})")

    @property
    def active(self) -> bool:
        return self.rpm is not None or self.tpm is not None


class _MemoryLog:
    """The entries of one process (no file)."""

    def __init__(self) -> None:
        self.entries = np.zeros((0, _FIELDS))
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def open(self) -> Iterator[_MemoryLog]:
        with self._lock:
            yield self

    def load(self) -> np.ndarray:
        return self.entries

    def save(self, entries: np.ndarray) -> None:
        self.entries = entries


class _FileLog:
    """The entries in a file shared by every process using the same endpoint budget."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()  # one thread of this process at a time; flock for the others
        self._fd = -1

    @contextlib.contextmanager
    def open(self) -> Iterator[_FileLog]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._fd = fd
                yield self
            finally:
                self._fd = -1
                os.close(fd)  # closing releases the flock

    def load(self) -> np.ndarray:
        size = os.fstat(self._fd).st_size
        data = os.pread(self._fd, size, 0)
        usable = len(data) - len(data) % (8 * _FIELDS)  # a torn tail (killed writer) is dropped
        return np.frombuffer(data[:usable], dtype=np.float64).reshape(-1, _FIELDS).copy()

    def save(self, entries: np.ndarray) -> None:
        data = np.ascontiguousarray(entries, dtype=np.float64).tobytes()
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))


class RequestBudget:
    """``acquire(tokens)`` blocks until a request of ``tokens`` fits the limits; ``settle`` corrects it.

    Counters (for metadata, progress and tests): ``acquired`` requests let through, ``waited_s``
    total time callers slept, ``grants`` the grant times of this process (bounded by ``keep``).
    """

    def __init__(
        self,
        limits: Limits,
        path: Path | None = None,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        margin_s: float = MARGIN_S,
        keep: int = 100_000,
    ) -> None:
        if not limits.active:
            raise ValueError("a request budget needs rpm or tpm")
        self.limits = limits
        self.window = limits.window_s + margin_s
        self._log: _MemoryLog | _FileLog = _FileLog(path) if path is not None else _MemoryLog()
        self._clock = clock
        self._sleep = sleep
        self._rng = random.Random()
        self._stats = threading.Lock()
        self.acquired = 0
        self.waited_s = 0.0
        self.grants: list[float] = []
        self._keep = keep

    def acquire(self, tokens: int = 0) -> float:
        """Wait until the request fits, book it, and return its ticket (pass it to ``settle``)."""
        while True:
            ticket, wait = self._try(float(tokens))
            if ticket is not None:
                return ticket
            with self._stats:
                self.waited_s += wait
            self._sleep(wait)

    def settle(self, ticket: float, tokens: int | None) -> None:
        """Date a sent request to now (its answer or error is back) and set the tokens it really used
        (None: keep the reserve).

        Why re-date it: the server counts a request when it arrives, which is after it was granted,
        by a delay the client cannot see; counted from its answer, which comes after its arrival,
        the request stays in the client's window at least as long as in the server's, whatever the
        delays. It costs the latency over the window (1 s of 60: 1.7 % of the quota).
        """
        with self._log.open() as log:
            now = self._clock()
            entries = log.load()
            hit = entries[:, 2] == ticket
            if hit.any():
                entries[hit, 0] = np.maximum(entries[hit, 0], now)
                if tokens is not None and self.limits.tpm is not None:
                    entries[hit, 1] = float(tokens)
                log.save(entries)

    def _try(self, tokens: float) -> tuple[float | None, float]:
        """(ticket, 0) when booked now, else (None, seconds to wait before trying again)."""
        with self._log.open() as log:
            now = self._clock()
            entries = log.load()
            entries = entries[entries[:, 0] > now - self.window]  # what is still in the window
            wait = self._wait(entries, tokens, now)
            if wait > 0:
                log.save(entries)
                return None, wait
            ticket = float(self._rng.getrandbits(52))
            log.save(np.vstack([entries, [[now, tokens, ticket]]]))
        with self._stats:
            self.acquired += 1
            self.grants.append(now)
            del self.grants[: -self._keep]
        return ticket, 0.0

    def _wait(self, entries: np.ndarray, tokens: float, now: float) -> float:
        """0 when one more request of ``tokens`` fits the window after ``now``, else the time until it does."""
        times = np.sort(entries[:, 0]) if len(entries) else entries[:, 0]
        until = now
        rpm, tpm = self.limits.rpm, self.limits.tpm
        if rpm is not None and len(times) >= rpm:
            oldest_to_go = times[len(times) - int(rpm)]  # after it leaves, rpm - 1 remain
            until = max(until, oldest_to_go + self.window)
        if tpm is not None and len(entries):
            order = np.argsort(entries[:, 0])
            spent = entries[order, 1]
            # tokens still in the window once entries[: i + 1] left it; need spent_after + tokens <= tpm
            after = spent.sum() - np.cumsum(spent)
            if spent.sum() + tokens > tpm:
                fits = np.nonzero(after + tokens <= tpm)[0]
                # a request larger than the whole budget goes alone, once the window is empty
                i = int(fits[0]) if len(fits) else len(spent) - 1
                until = max(until, entries[order[i], 0] + self.window)
        return 0.0 if until <= now else max(until - now, _MIN_WAIT_S)


@dataclass
class Booking:
    """One request's slot while it is in flight; ``used``: its tokens once the endpoint reported them."""

    used: int | None = None


@contextlib.contextmanager
def booked(budget: RequestBudget | None, tokens: int) -> Iterator[Booking]:
    """Hold a slot of ``budget`` (None: no limits) for one request sent inside the block; on exit the
    slot is dated to that moment and given the tokens the block set in ``used`` (``settle``)."""
    booking = Booking()
    if budget is None:
        yield booking
        return
    ticket = budget.acquire(tokens)
    try:
        yield booking
    finally:
        budget.settle(ticket, booking.used)


def budget_path(folder: Path, endpoint: str) -> Path:
    """The shared log of one endpoint's budget under ``folder`` (one file per endpoint identity)."""
    digest = hashlib.sha256(endpoint.encode()).hexdigest()[:16]
    return folder / "_ratelimit" / f"{digest}.bin"


def reserve_tokens(messages: list[dict[str, object]], max_tokens: int) -> int:
    """Upper bound of a request's tokens before it is sent: its prompt (pinned count) plus ``max_tokens``."""
    return sum(count_tokens(str(m.get("content") or "")) for m in messages) + max_tokens


def budget_for(rpm: float | None, tpm: float | None, folder: Path | None, endpoint: str) -> RequestBudget | None:
    """The endpoint's budget shared through ``folder`` (None: in this process only); None without limits."""
    limits = Limits(rpm, tpm)
    if not limits.active:
        return None
    return RequestBudget(limits, budget_path(folder, endpoint) if folder is not None else None)
