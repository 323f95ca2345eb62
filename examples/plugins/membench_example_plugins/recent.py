"""``RecentSessionsMemory``: remembers only the last N sessions of a haystack.

A complete membench memory system in one small file, written against membench's public contract
(pipeline.memory.base.MemorySystem) without editing the membench package. It is a useful
baseline too: how much of a benchmark is answerable from the most recent conversations alone.

Use it from a config in either way (README, Plugins):

- ``kind: membench_example_plugins.recent:RecentSessionsMemory`` (the package importable), or
- ``kind: recent_sessions`` once this folder is installed (``pip install examples/plugins``:
  its pyproject.toml declares the entry point in group ``membench.memory_systems``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.core.records import QuestionRow
from pipeline.core.tokens import count_tokens
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult
from pipeline.memory.context import ORDER_TIME, render, retrieved
from pipeline.memory.units import turn_units
from pipeline.store.corpus import HaystackSession


class RecentSessionsParams(BaseModel):
    """The ``params`` block; membench validates it when the config loads (unknown keys fail)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sessions: int = Field(default=2, ge=1)  # how many of the latest sessions the memory keeps


class RecentSessionsMemory:
    """Keeps the turns of the last ``sessions`` sessions ingested; retrieval returns them all."""

    params_model = RecentSessionsParams
    version = 1  # bump when a change alters what it returns for the same params (recomputes results)
    kind = "recent_sessions"
    uses_encoder = False  # no embeddings needed: the encoder is neither built nor hashed
    uses_llm = False

    def __init__(self, params: Mapping[str, Any] | BaseModel, deps: MemoryDeps) -> None:
        # membench passes the params it validated at load; a dict (direct use, tests) is validated here
        self.params = params if isinstance(params, RecentSessionsParams) else RecentSessionsParams(**dict(params))
        self.by_session: dict[int, list[MemoryUnit]] = {}

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        units = turn_units(haystack_id, session)
        self.by_session[session.position] = units
        return units  # persisted by membench as the checkpoint; handed back to restore() on resume

    def restore(self, units: list[MemoryUnit]) -> None:
        self.by_session = {}
        for unit in units:
            self.by_session.setdefault(unit.session_position, []).append(unit)

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        latest = sorted(self.by_session)[-self.params.sessions :]
        kept = [u for position in latest for u in self.by_session[position]]
        context = render(kept, ORDER_TIME)
        return RetrievalResult(
            units=tuple(retrieved(u, rank) for rank, u in enumerate(kept, start=1)),
            context=context,
            context_tokens=count_tokens(context),
            notes={"sessions_kept": len(latest), "sessions_ingested": len(self.by_session)},
        )
