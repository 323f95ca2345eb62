"""LongMemEval's flat retrieval corpus, as membench memory units (shared by ``flat_bm25`` and ``flat_dense``).

Follows xiaowu0162/LongMemEval ``src/retrieval/run_retrieval.py`` ``process_item_flat_index``:

- ``turn`` granularity: one document per USER turn, its text the turn's content as given (no
  speaker prefix, no date); assistant turns are not indexed.
- ``session`` granularity: one document per session, the contents of its user turns joined by one
  space; a session without user turns is still a document (empty text), as in the official corpus.

Documents keep haystack order (session by session, turn by turn): the official ranking breaks
ties by corpus position, so the order is part of the protocol. Which roles count as "user" is a
parameter (``roles``, default ``[user]``, LongMemEval's rule); on LoCoMo, membench's ``user`` is
``speaker_a``, so a LoCoMo run that wants both speakers sets ``roles: [user, assistant]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from pydantic import Field

from pipeline.core.records import QuestionRow
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult
from pipeline.memory.context import ORDER_TIME, ranked_result
from pipeline.memory.params import ParamsInput, SystemParams, parse_params
from pipeline.memory.units import KIND_SESSION, KIND_TURN
from pipeline.store.corpus import HaystackSession

GRANULARITY_TURN: Final = "turn"
GRANULARITY_SESSION: Final = "session"


class FlatParams(SystemParams):
    """What both flat retrievers take: the official corpus rules plus membench's context settings."""

    granularity: Literal["turn", "session"] = GRANULARITY_TURN
    # ranked units kept; None = every document, as the official code ranks them. Why the default: a
    # turn ranking's session metrics at k read turns until k distinct sessions are covered (often the
    # whole ranking), so a cut ranking would under-report them; the reader's context is cut by the budget
    top_k: int | None = Field(default=None, gt=0)
    roles: tuple[str, ...] = Field(default=("user",), min_length=1)
    order: Literal["time", "rank"] = ORDER_TIME
    token_budget: int | None = Field(default=8_000, gt=0)


def flat_units(haystack_id: str, hs: HaystackSession, granularity: str, roles: Sequence[str]) -> list[MemoryUnit]:
    """The session's documents at ``granularity``: its ``roles`` turns, or the session as one text."""
    turns = [t for t in hs.turns if t.role in roles]
    s = hs.session
    if granularity == GRANULARITY_SESSION:
        return [MemoryUnit(s.session_key, haystack_id, s.session_key, hs.position, tuple(t.turn_id for t in turns),
                           " ".join(t.text for t in turns), s.datetime, "session", KIND_SESSION)]  # fmt: skip
    return [MemoryUnit(t.turn_id, haystack_id, s.session_key, hs.position, (t.turn_id,), t.text, s.datetime, t.role,
                       KIND_TURN) for t in turns]  # fmt: skip


class FlatMemory:
    """A flat index over one haystack's documents; subclasses score the whole corpus per question.

    Why the whole corpus: the official code ranks every document of the haystack, and its metrics
    (up to k = 50) read that ranking; ``top_k`` only limits what is stored and shown.
    """

    kind: str
    params_model: type[FlatParams] = FlatParams
    score_column = "semantic"  # the ``retrievals.units`` column of the scores
    version = 1
    uses_llm = False

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.params = parse_params(self.params_model, params, self.kind)
        self.units: list[MemoryUnit] = []
        self._changed()

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        added = flat_units(haystack_id, session, self.params.granularity, self.params.roles)
        self.units.extend(added)
        self._changed()
        return added

    def restore(self, units: list[MemoryUnit]) -> None:
        self.units = list(units)
        self._changed()

    def _changed(self) -> None:
        """Hook: the corpus changed (drop any index built on the old one)."""

    def ranking(self, question: str) -> list[tuple[int, float]]:
        """(document index, score) of every document, best first, as the official code orders them."""
        raise NotImplementedError

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        ranked = self.ranking(question.question)[: self.params.top_k] if self.units else []  # [:None] = all
        positions = {u.unit_id: i for i, u in reversed(list(enumerate(self.units)))}
        p = self.params
        notes: dict[str, object] = {"top_k": p.top_k, "granularity": p.granularity, "index_units": len(self.units),
                                    "roles": list(p.roles)}  # fmt: skip
        hits = [(self.units[i], score) for i, score in ranked]
        notes |= self.notes()
        return ranked_result(hits, self.params.token_budget, self.params.order, positions, notes, self.score_column)

    def notes(self) -> dict[str, object]:
        """What the subclass adds to the retrieval notes (protocol, model)."""
        return {}
