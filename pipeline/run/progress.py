"""Stage progress: questions done, and for LLM work requests/s, tokens/s, cost so far and ETA.

Why both a bar and log lines: ``dagster job execute`` in a terminal shows one bar per stage (its
postfix carries the LLM figures), while the Dagster UI (no terminal) needs periodic lines in the
run log. Why a ticker thread: a stage whose questions each take longer than ``every_s`` (a slow
local model) would otherwise go silent; the ticker reports at least every ``every_s`` whether or
not a question finished. The clock and the LLM meter are injectable, so tests drive ``tick()``
with a fake clock and count the lines instead of sleeping.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from tqdm import tqdm

from pipeline.llm.meter import METER, Meter, MeterSnapshot

LOG_EVERY_S = 10.0
TICK_S = 1.0


class Progress:
    """Counts finished questions of one stage; a bar when stderr is a terminal, a log line every ``every_s``."""

    def __init__(
        self,
        stage: str,
        total: int,
        log: Callable[[str], None],
        *,
        every_s: float = LOG_EVERY_S,
        bar: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        meter: Meter = METER,
        ticker: bool = True,
    ) -> None:
        self.stage = stage
        self.total = total
        self.log = log
        self.every_s = every_s
        self.done = 0
        self.lines: list[str] = []  # every line reported (for the stage's metadata and tests)
        self._clock = clock
        self._meter = meter
        self._base = meter.snapshot()
        self._start = self._last = clock()
        self._lock = threading.Lock()
        use_bar = sys.stderr.isatty() if bar is None else bar
        self._bar = tqdm(total=total, desc=stage, unit="q", leave=True) if use_bar and total else None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if ticker and total:
            self._thread = threading.Thread(target=self._tick_loop, name=f"progress-{stage}", daemon=True)
            self._thread.start()

    def step(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            if self._bar is not None:
                self._bar.update(n)
        self.tick()

    def tick(self) -> None:
        """Report if ``every_s`` has passed since the last report."""
        with self._lock:
            now = self._clock()
            if now - self._last < self.every_s:
                return
            self._last = now
            line = self.line(now)
            self.lines.append(line)
            if self._bar is not None:
                self._bar.set_postfix_str(line.split(", ", 2)[-1], refresh=True)
        self.log(line)

    def line(self, now: float) -> str:
        """``<stage>: d/t questions, q/s[, LLM figures], ETA``: rates since the stage started."""
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        eta = f"ETA {(self.total - self.done) / rate:.0f} s" if rate > 0 else "ETA unknown"
        parts = [f"{self.stage}: {self.done}/{self.total} questions", f"{rate:.2f} q/s"]
        llm = self._meter.snapshot() - self._base
        if llm.requests or llm.cache_hits:
            parts.append(llm_figures(llm, elapsed))
        return ", ".join([*parts, eta])

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _tick_loop(self) -> None:
        while not self._stop.wait(TICK_S):
            self.tick()


def llm_figures(llm: MeterSnapshot, elapsed: float) -> str:
    """LLM requests/s, tokens/s and cost so far (plus failures and cache hits when there are any)."""
    text = f"{llm.requests / elapsed:.1f} requests/s, {llm.tokens / elapsed:.0f} tokens/s, ${llm.cost_usd:.4f} so far"
    if llm.failed:
        text += f", {llm.failed} failed calls"
    if llm.cache_hits:
        text += f", {llm.cache_hits} cached"
    return text
