"""Telling an endpoint that hangs from one that is slow: a probe while a request waits for its reply.

Why: an endpoint that accepts connections and never answers (a wedged server, a proxy whose
upstream is gone) is cut by neither the connect timeout (the connection succeeds) nor anything
but the reply timeout, which must stay long for slow local models (``timeout_s``, 60 s). With the
shipped defaults such an endpoint kept the answers stage for 306 s (three 60 s timeouts per call,
then single attempts until the stage's breaker tripped), against <= 30 s for a refused port or a
black hole. A chat completion is silent until it is done, so its own wait cannot tell; a second,
tiny request can: a server that is generating still answers ``GET /models`` (any HTTP status
counts, 404 and 401 included), a hung one does not. So a request that has had no reply for
``probe_after_s`` is joined by such a probe (timeout ``connect_timeout_s``); no answer to it means
the endpoint hangs, and the call fails at once, as unreachable (pipeline/llm/client.py marks the
endpoint down, so later calls probe as soon as they send and the stage's breaker stops the stage).
A probe that is answered lets the request wait on (probed again every ``probe_after_s``) up to
its own timeout.

The request and each probe run in daemon threads (kept a while for the next request: ``_Workers``);
the caller returns with whichever settles it first (the request's reply or error, or a probe that
got no answer), and a request left behind ends at its own timeout (or when the client is closed).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from pipeline.llm.protocol import UNREACHABLE_CONNECTION

if TYPE_CHECKING:
    import openai

T = TypeVar("T")

PROBE_PATH = "/models"  # OpenAI-compatible servers list their models here; any HTTP answer proves them alive


@dataclass(frozen=True)
class Hung:
    """A request that had no reply after ``waited_s`` while the endpoint answered no probe (``why``)."""

    waited_s: float
    why: str


def probe(client: openai.OpenAI, timeout_s: float) -> str | None:
    """None when the endpoint answers ``GET /models`` with any HTTP status within ``timeout_s``; else why
    not (a connection error is worded as the client words one: pipeline/llm/protocol.py)."""
    import openai

    try:
        client.with_options(timeout=timeout_s, max_retries=0).models.list()
    except openai.APITimeoutError:
        return f"no answer to GET {PROBE_PATH} within {timeout_s:g}s"
    except openai.APIConnectionError as exc:  # refused or reset: down rather than hung
        return f"{UNREACHABLE_CONNECTION}{exc.__cause__ or exc} (GET {PROBE_PATH})"
    except openai.OpenAIError:
        return None  # an HTTP error status, or a body it could not read: the server answered
    return None


def watched(request: Callable[[], T], check: Callable[[], str | None], first_s: float, every_s: float) -> T | Hung:
    """``request()``'s result, or Hung when ``check()`` (the probe) reports a problem while it waits.

    ``check`` starts after ``first_s`` without a result (0: at once, alongside the request), then
    ``every_s`` after the previous one answered. Both run in threads: the request's result is
    returned as soon as it comes, even while a probe is still waiting; a probe's problem counts
    only while the request has no result. An exception of ``request`` is raised here.
    """
    # A SimpleQueue: its get with a timeout waits in C, where a Queue's runs a Python Condition
    # (a lock made per wait, notify walking its waiters) on both sides of every request's hand-off.
    events: queue.SimpleQueue[_Event[T]] = queue.SimpleQueue()
    start = time.monotonic()
    _spawn(lambda: _Event(request=_Outcome.of(request)), events)
    next_probe: float | None = start + first_s  # None while a probe runs
    while True:
        timeout = None if next_probe is None else max(0.0, next_probe - time.monotonic())
        try:
            event = events.get(timeout=timeout) if timeout is None or timeout > 0 else events.get_nowait()
        except queue.Empty:
            _spawn(lambda: _Event(probe=check()), events)
            next_probe = None
            continue
        if event.request is not None:
            return event.request.unwrap()
        if event.probe is not None:
            return Hung(time.monotonic() - start, event.probe)
        next_probe = time.monotonic() + every_s


@dataclass(frozen=True)
class _Outcome(Generic[T]):
    value: T | None = None
    error: BaseException | None = None

    @classmethod
    def of(cls, fn: Callable[[], T]) -> _Outcome[T]:
        try:
            return cls(value=fn())
        except BaseException as exc:  # handed to the caller, never lost in a thread
            return cls(error=exc)

    def unwrap(self) -> T:
        if self.error is not None:
            raise self.error
        return cast(T, self.value)  # set whenever error is None


@dataclass(frozen=True)
class _Event(Generic[T]):
    """What a thread of ``watched`` reports: the request's outcome, or a probe's verdict (None: answered)."""

    request: _Outcome[T] | None = None
    probe: str | None = None


class _Workers:
    """Daemon threads that run a task each, then wait ``idle_s`` for another before they end.

    Why not a thread per task: every request of a stage is watched, so a new thread per request
    (a clone, a stack mapped and unmapped, the start handshake) was paid 4,000 times by a 2,000-question
    LLM run. Why not a ThreadPoolExecutor: its pool is bounded, and a request left behind by a hung
    endpoint keeps its thread until its own timeout; here a task never waits for a thread (one is
    started whenever none is idle), as with a thread per task.
    """

    def __init__(self, idle_s: float = 30.0) -> None:
        self.idle_s = idle_s
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a task and not yet promised one
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                self._tasks.put(task)
                return
        threading.Thread(target=self._loop, args=(task,), name="llm-watched", daemon=True).start()

    def _loop(self, task: Callable[[], None]) -> None:
        while True:
            task()
            with self._lock:
                self._idle += 1
            try:
                task = self._tasks.get(timeout=self.idle_s)
            except queue.Empty:
                with self._lock:  # a task promised to an idle thread just now is still taken
                    try:
                        task = self._tasks.get_nowait()
                    except queue.Empty:
                        self._idle -= 1
                        return


_WORKERS = _Workers()  # the threads of every watched request and probe of this process


def _spawn(work: Callable[[], _Event[T]], events: queue.SimpleQueue[_Event[T]]) -> None:
    def run() -> None:
        try:
            events.put(work())
        except BaseException as exc:  # a probe that raised: report it as no answer
            events.put(_Event(probe=f"probe failed: {type(exc).__name__}: {exc}"))

    _WORKERS.submit(run)
