"""A fake clock for code that waits (request budgets): time moves only when that code sleeps."""

from __future__ import annotations

import threading


class FakeClock:
    """Time that moves only when the code under test sleeps (shared by threads)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.lock = threading.Lock()
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        with self.lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.sleeps.append(seconds)
            self.now += seconds
