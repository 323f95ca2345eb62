"""Stage progress: a tqdm bar with counts and ETA on a terminal, a log line every ``every_s`` otherwise.

Why both: ``dagster job execute`` in a terminal should show one bar per stage rather than a stream of
log lines, while the Dagster UI (no terminal) still needs periodic progress in the run log.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from tqdm import tqdm

LOG_EVERY_S = 30.0


class Progress:
    """Counts finished questions of one stage; a bar when stderr is a terminal."""

    def __init__(
        self,
        stage: str,
        total: int,
        log: Callable[[str], None],
        *,
        every_s: float = LOG_EVERY_S,
        bar: bool | None = None,
    ) -> None:
        self.stage = stage
        self.total = total
        self.log = log
        self.every_s = every_s
        self.done = 0
        self._start = self._last = time.monotonic()
        use_bar = sys.stderr.isatty() if bar is None else bar
        self._bar = tqdm(total=total, desc=stage, unit="q", leave=True) if use_bar and total else None

    def step(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            rate = self.done / max(now - self._start, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else float("nan")
            self.log(f"{self.stage}: {self.done}/{self.total} questions, {rate:.2f}/s, ETA {eta:.0f} s")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
