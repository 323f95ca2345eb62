"""Requests/tokens-per-minute budgets: schedules on a fake clock (counted per window, never timed),
one budget shared by several processes through its file, and the real client against the fake
server enforcing the same limits (no request over the quota, no question failed)."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, Fault
from pipeline.llm.protocol import ChatRequest
from pipeline.llm.ratelimit import Limits, RequestBudget, booked, budget_path, reserve_tokens
from tests.support.clock import FakeClock
from tests.support.llm import llm, server

__all__ = ["llm", "server"]  # fixtures


def most_in_a_window(times: list[float], window: float) -> int:
    """The largest number of ``times`` inside any half-open window ``(t - window, t]``."""
    return max((sum(t - window < s <= t for s in times) for t in times), default=0)


def budget(clock: FakeClock, path: Path | None = None, **limits: float) -> RequestBudget:
    return RequestBudget(Limits(**limits), path, clock=clock, sleep=clock.sleep, margin_s=0.0)


# rpm, number of requests arriving at once -> grant times (relative; 60 s windows)
RPM_SCHEDULES = [
    (10, 25, [0.0] * 10 + [60.0] * 10 + [120.0] * 5),  # bursts up to the limit, then the next window
    (3, 3, [0.0] * 3),
    (1, 3, [0.0, 60.0, 120.0]),
]


@pytest.mark.parametrize(("rpm", "n", "grants"), RPM_SCHEDULES)
def test_rpm_schedule(rpm: float, n: int, grants: list[float]) -> None:
    clock = FakeClock()
    b = budget(clock, rpm=rpm)
    for _ in range(n):
        b.acquire()
    assert [g - 1000.0 for g in b.grants] == pytest.approx(grants)
    assert most_in_a_window(b.grants, 60.0) == min(rpm, n)


def test_tpm_counts_tokens_and_settles_to_real_usage() -> None:
    clock = FakeClock()
    b = budget(clock, tpm=100)
    tickets = [b.acquire(30) for _ in range(3)]  # 90 tokens reserved
    assert clock.sleeps == []
    b.settle(tickets[0], 10)  # really used 10: 70 in the window, a 30-token request fits
    b.acquire(30)
    assert clock.sleeps == []
    b.acquire(30)  # 100 + 30 > 100: waits until the first request leaves the window
    assert clock.sleeps == pytest.approx([60.0])


def test_a_request_counts_from_its_answer() -> None:
    """Dated again when its answer is back (5 s later): the next slot of rpm=1 opens at 65 s, not 60 s,
    so however late the request reached the server, the server's window has let it go too."""
    clock = FakeClock()
    b = budget(clock, rpm=1, tpm=100)
    with booked(b, 40) as booking:
        clock.now += 5.0  # in flight
        booking.used = 12
    with booked(b, 40):
        pass
    assert clock.sleeps == pytest.approx([60.0])  # 5 + 60 = 65 s after the first grant
    assert [g - 1000.0 for g in b.grants] == pytest.approx([0.0, 65.0])


def test_booked_without_limits_is_free() -> None:
    with booked(None, 10) as booking:
        booking.used = 3
    assert booking.used == 3


def test_request_larger_than_the_budget_goes_alone() -> None:
    clock = FakeClock()
    b = budget(clock, tpm=100)
    b.acquire(10)
    b.acquire(500)  # never fits: it waits for an empty window, then goes (instead of waiting forever)
    assert clock.sleeps == pytest.approx([60.0])
    assert b.acquired == 2


def test_both_limits_together() -> None:
    clock = FakeClock()
    b = budget(clock, rpm=5, tpm=50)
    for _ in range(12):
        b.acquire(20)  # tokens bind first: 2 per window
    assert most_in_a_window(b.grants, 60.0) == 2
    assert b.acquired == 12


def test_threads_never_exceed_the_window() -> None:
    clock = FakeClock()
    b = budget(clock, rpm=7)
    threads = [threading.Thread(target=lambda: [b.acquire() for _ in range(10)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert b.acquired == 80 and len(b.grants) == 80
    assert most_in_a_window(b.grants, 60.0) <= 7


def test_budgets_on_one_file_share_the_limit(tmp_path: Path) -> None:
    """Two budgets on one file (as two runs of a config): 4 + 4 requests, limit 5 per window."""
    clock = FakeClock()
    path = budget_path(tmp_path, "http://x/v1 m")
    a, b = budget(clock, path, rpm=5), budget(clock, path, rpm=5)
    for _ in range(4):
        a.acquire()
        b.acquire()
    assert most_in_a_window(a.grants + b.grants, 60.0) == 5
    assert sorted(a.grants + b.grants)[5] - 1000.0 == pytest.approx(60.0)


def _fill(path: str, n: int) -> None:
    RequestBudget(Limits(rpm=10), Path(path)).acquire()  # real clock: the window is far from full
    for _ in range(n - 1):
        RequestBudget(Limits(rpm=10), Path(path)).acquire()


def test_processes_share_one_budget(tmp_path: Path) -> None:
    """Two processes take 4 slots each through the file; the next request of a third must wait."""
    path = budget_path(tmp_path, "endpoint")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_fill, args=(str(path), 4)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    here = RequestBudget(Limits(rpm=10), path)
    assert here._try(0)[0] is not None and here._try(0)[0] is not None  # slots 9 and 10
    ticket, wait = here._try(0)  # the 11th within the minute
    assert ticket is None and wait > 1.0


def test_a_torn_file_loses_only_its_tail(tmp_path: Path) -> None:
    clock = FakeClock()
    path = budget_path(tmp_path, "e")
    b = budget(clock, path, rpm=3)
    b.acquire()
    with path.open("ab") as f:
        f.write(b"\x00" * 5)  # a writer killed mid-write
    b.acquire()
    b.acquire()
    b.acquire()  # the 4th waits: the two good entries and the new ones were kept
    assert clock.sleeps == pytest.approx([60.0])


@pytest.mark.parametrize("bad", [{"rpm": 0}, {"tpm": -1}, {"window_s": 0, "rpm": 1}])
def test_rejects_bad_limits(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Limits(**bad)


def test_reserve_is_an_upper_bound_of_the_fake_servers_usage() -> None:
    messages: list[dict[str, object]] = [{"role": "user", "content": "What's the dog's name, again?"}]
    assert reserve_tokens(messages, 16) == 11 + 16  # regex tokens; the fake server counts 5 words


# ---- the real client against a server enforcing the quota ------------------------------------------
def test_client_keeps_to_the_servers_quota(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    """32 workers, a server allowing 6 requests and 40 tokens per 1 s window, and a storm of 429s:
    every question is answered, and no window of the client's sends holds more than the quota."""
    server.set_quota(rpm=6, tpm=40, window_s=1.0)
    server.push_faults(*[Fault.rate_limited("0.05") for _ in range(20)])
    client = llm.model_copy(update={"max_concurrency": 32, "max_tokens": 8, "max_retries": 8})
    rt = client._runtime()
    rt.limiter = RequestBudget(Limits(rpm=6, tpm=40, window_s=1.0))
    requests = [ChatRequest([{"role": "user", "content": f"question number {i}"}]) for i in range(24)]
    replies = client.chat_many(requests)
    assert len(replies) == 24 and all(r.ok for r in replies), [r.error for r in replies if not r.ok]
    assert most_in_a_window(rt.limiter.grants, 1.0) <= 6  # the client's own sends, exactly
    assert most_in_a_window([t for t, _ in server.accepted], 1.0) <= 6
    for t, _ in server.accepted:  # tokens (prompt + reply words) per server window
        assert sum(n for s, n in server.accepted if t - 1.0 < s <= t) <= 40
    assert len(server.accepted) == 24  # each question was accepted once; 429s were absorbed
