"""Process-wide counters of live LLM requests, tokens and cost, read by stage progress.

Why process-wide: a stage's LLM calls go through whichever clients its readers, judges and memory
systems hold (the run's endpoint, a separate judge endpoint); progress wants their sum without
each stage threading its clients through. Every client adds its replies here; a stage reads a
snapshot at its start and the difference since. Cache hits are counted apart (they cost nothing).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pipeline.llm.protocol import LLMReply


@dataclass(frozen=True)
class MeterSnapshot:
    """Totals at one moment; subtract two for what happened in between."""

    requests: int = 0  # HTTP attempts (retries included)
    replies: int = 0  # calls answered live
    failed: int = 0  # calls that failed after their retries
    cache_hits: int = 0
    tokens: int = 0  # prompt + completion tokens of live replies (the endpoint's usage)
    cost_usd: float = 0.0

    def __sub__(self, other: MeterSnapshot) -> MeterSnapshot:
        return MeterSnapshot(
            self.requests - other.requests,
            self.replies - other.replies,
            self.failed - other.failed,
            self.cache_hits - other.cache_hits,
            self.tokens - other.tokens,
            self.cost_usd - other.cost_usd,
        )


class Meter:
    """Thread-safe running totals of LLM calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._now = MeterSnapshot()

    def add(self, reply: LLMReply) -> None:
        tokens = (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
        with self._lock:
            n = self._now
            if reply.cache_hit:
                self._now = MeterSnapshot(n.requests, n.replies, n.failed, n.cache_hits + 1, n.tokens, n.cost_usd)
                return
            self._now = MeterSnapshot(
                n.requests + reply.attempts,
                n.replies + reply.ok,
                n.failed + (not reply.ok),
                n.cache_hits,
                n.tokens + (tokens if reply.ok else 0),
                n.cost_usd + (reply.cost_usd or 0.0),
            )

    def snapshot(self) -> MeterSnapshot:
        with self._lock:
            return self._now


METER = Meter()  # every LLM client of this process adds to it (pipeline/llm/client.py)
