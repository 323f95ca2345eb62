"""``full_context``: the whole haystack in time order, cut to a token budget (oldest dropped first).

Why: the no-memory baseline every memory system must beat. A reader's context window is finite,
so the haystack is trimmed from its oldest end (recent sessions usually carry the latest state)
and the cut is counted, so a "full context" score is never silently a partial-context score.
"""

from __future__ import annotations

from pydantic import Field

from pipeline.core.records import QuestionRow
from pipeline.core.tokens import TOKEN_COUNT_DEFINITION, count_tokens
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult
from pipeline.memory.context import ORDER_TIME, fit_budget, render, retrieved
from pipeline.memory.params import ParamsInput, SystemParams, parse_params
from pipeline.memory.units import turn_units
from pipeline.store.corpus import HaystackSession

KIND = "full_context"


class FullContextParams(SystemParams):
    # regex_word_punct tokens; ~1.2x BPE tokens, so 100k fits a 128k-token reader with room to answer
    token_budget: int | None = Field(default=100_000, gt=0)


class FullContextMemory:
    """Keeps every indexed turn; ``retrieve`` returns them all (ranked in time order)."""

    params_model = FullContextParams
    version = 1
    kind = KIND
    uses_encoder = False
    uses_llm = False

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.params = parse_params(self.params_model, params, KIND)
        self.units: list[MemoryUnit] = []

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        added = turn_units(haystack_id, session)
        self.units.extend(added)
        return added

    def restore(self, units: list[MemoryUnit]) -> None:
        self.units = list(units)

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        newest_first = self.units[::-1]
        fitted = fit_budget(newest_first, self.params.token_budget, ORDER_TIME)
        kept = list(fitted.units)[::-1]
        context = render(kept, ORDER_TIME)
        return RetrievalResult(
            units=tuple(retrieved(u, rank) for rank, u in enumerate(kept, start=1)),
            context=context,
            context_tokens=count_tokens(context),
            trimmed_units=fitted.trimmed_units,
            notes={
                "ranking": "none: every kept unit in time order (rank 1 = oldest kept)",
                "token_budget": self.params.token_budget,
                "token_count": TOKEN_COUNT_DEFINITION,
                "units_total": len(self.units),
                "trimmed_units": fitted.trimmed_units,
                "trimmed": "oldest units first",
                "truncated_unit": fitted.truncated,
            },
        )
