"""Stage progress: lines at least every 10 s with requests/s, tokens/s, cost and ETA, driven by a
fake clock and a private LLM meter (counted, never slept)."""

from __future__ import annotations

from pipeline.llm.meter import Meter, MeterSnapshot
from pipeline.llm.protocol import LLMReply
from pipeline.run.progress import LOG_EVERY_S, Progress


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def reply(*, ok: bool = True, cache_hit: bool = False, attempts: int = 1, cost: float = 0.001) -> LLMReply:
    return LLMReply(
        text="x" if ok else None,
        ok=ok,
        error=None if ok else "HTTP 500",
        prompt_tokens=90 if ok else None,
        completion_tokens=10 if ok else None,
        latency_s=1.0,
        cache_hit=cache_hit,
        attempts=0 if cache_hit else attempts,
        cost_usd=cost if ok else None,
        model="m",
        cache_key="k",
    )


def progress(clock: Clock, meter: Meter, lines: list[str], total: int = 100) -> Progress:
    return Progress("answers", total, lines.append, clock=clock, meter=meter, bar=False, ticker=False)


def test_reports_llm_rates_cost_and_eta() -> None:
    clock, meter, lines = Clock(), Meter(), []
    meter.add(reply())  # before the stage started: not counted
    p = progress(clock, meter, lines)
    for _ in range(20):
        meter.add(reply(attempts=2 if _ == 0 else 1))
        p.step()
    assert lines == []  # nothing before 10 s
    clock.now += 10.0
    p.tick()
    assert lines == ["answers: 20/100 questions, 2.00 q/s, 2.1 requests/s, 200 tokens/s, $0.0200 so far, ETA 40 s"]


def test_reports_at_least_every_interval_without_steps() -> None:
    """A slow stage (no question finishing) still reports every 10 s: the ticker calls tick()."""
    clock, meter, lines = Clock(), Meter(), []
    p = progress(clock, meter, lines)
    for _ in range(35):
        clock.now += 1.0
        p.tick()
    assert len(lines) == 3 and LOG_EVERY_S <= 10.0
    assert lines[0] == "answers: 0/100 questions, 0.00 q/s, ETA unknown"


def test_failures_and_cache_hits_are_shown_apart() -> None:
    clock, meter, lines = Clock(), Meter(), []
    p = progress(clock, meter, lines, total=4)
    meter.add(reply(ok=False, attempts=3))
    meter.add(reply(cache_hit=True))
    p.step(2)
    clock.now += 10.0
    p.step()
    assert lines == [
        "answers: 3/4 questions, 0.30 q/s, 0.3 requests/s, 0 tokens/s, $0.0000 so far, 1 failed calls, "
        "1 cached, ETA 3 s"
    ]


def test_meter_snapshots_subtract() -> None:
    meter = Meter()
    before = meter.snapshot()
    meter.add(reply())
    meter.add(reply(cache_hit=True))
    assert meter.snapshot() - before == MeterSnapshot(1, 1, 0, 1, 100, 0.001)


def test_ticker_thread_stops_on_close() -> None:
    lines: list[str] = []
    p = Progress("judgments", 5, lines.append, bar=False, meter=Meter())
    assert p._thread is not None and p._thread.is_alive()
    p.close()
    assert not p._thread.is_alive()
