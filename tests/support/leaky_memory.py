"""Memory systems that break the isolation canary on purpose (``kind: tests.support.leaky_memory:<Name>``).

``LeakyMemory`` keeps every instance's units in one class-level list (a store shared by the whole
process, as a product with one user id for every conversation would); ``ForgetfulMemory`` returns
nothing (the check cannot tell, so it must say inconclusive); ``BrokenMemory`` raises on ingestion.
"""

from __future__ import annotations

from typing import ClassVar

from pipeline.core.records import QuestionRow
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult
from pipeline.memory.context import retrieved
from pipeline.memory.params import ParamsInput, SystemParams
from pipeline.memory.units import turn_units
from pipeline.store.corpus import HaystackSession


class _Params(SystemParams):
    pass


class LeakyMemory:
    kind = "leaky"
    params_model = _Params
    version = 1
    uses_encoder = False
    shared: ClassVar[list[MemoryUnit]] = []

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.units = LeakyMemory.shared

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        added = turn_units(haystack_id, session)
        self.units.extend(added)
        return added

    def restore(self, units: list[MemoryUnit]) -> None:
        self.units.extend(units)

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        words = {w.lower().strip("?") for w in question.question.split()}
        hits = [u for u in self.units if words & {w.lower().strip(".,") for w in u.text.split()}]
        context = "\n".join(u.text for u in hits)
        return RetrievalResult(tuple(retrieved(u, i) for i, u in enumerate(hits, start=1)), context, len(hits))


class ForgetfulMemory(LeakyMemory):
    kind = "forgetful"

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.units = []

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        return RetrievalResult((), "", 0)


class BrokenMemory(LeakyMemory):
    kind = "broken"

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        raise RuntimeError("store unreachable")
