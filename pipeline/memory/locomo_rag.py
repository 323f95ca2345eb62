"""``locomo_rag``: LoCoMo's RAG databases (dialogs, observations, session summaries) as a memory system.

Follows snap-research/locomo (branch ``code``) ``task_eval/evaluate_gpts.py``: ``prepare_for_rag``
builds one database per ``rag_mode`` and ``get_rag_context`` ranks it for a question:

- ``dialog``: one entry per turn, ``<speaker> said, "<text>"``, id = its dialogue id;
- ``observation``: one entry per observation fact shipped with the session (``observation`` of
  locomo10.json, speaker by speaker in file order), its text the fact, its ids the dialogue ids it
  cites (a ``"D1:2, D1:5"`` string is split at commas, a list is taken as is);
- ``summary``: one entry per session summary (``session_summary``), id ``S<n>``.

Sessions in number order, empty sessions skipped. Score = inner product of the question's vector
with each entry's (``np.dot``), ranked by ``argsort(scores)[::-1]``, the first ``top_k`` kept
(official default 5). The context is the official string: ``<session date>: <entry>`` lines joined
by a newline (dialogs, observations) or a blank line (summaries), no token budget. LoCoMo's recall
(``evaluation.py`` ``eval_question_answering``) is what the report's
``evidence_recall_official_context`` computes from this context: the retrieved dialogue ids, or for
summaries the ``S<n>`` session ids ("session hits").

Deviations, on purpose: vectors come from the run's embedding model (the official retrievers are
DPR, Contriever, Dragon or OpenAI embeddings, none shipped offline); the released locomo10.json
has no ``clean_text``, so the turn's ``text`` is used; an observation id that names no turn of the
conversation cannot be carried to the report (the official code would keep the raw string).
"""

from __future__ import annotations

import json
from typing import Final, Literal

import numpy as np
from pydantic import Field

from pipeline.core.records import QuestionRow
from pipeline.core.tokens import count_tokens
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult
from pipeline.memory.context import retrieved
from pipeline.memory.params import ParamsInput, SystemParams, parse_params
from pipeline.memory.units import KIND_NOTE, KIND_SESSION, KIND_SUMMARY, KIND_TURN
from pipeline.memory.vector import require_encoder
from pipeline.store.corpus import HaystackSession

KIND = "locomo_rag"
MODE_DIALOG: Final = "dialog"
MODE_OBSERVATION: Final = "observation"
MODE_SUMMARY: Final = "summary"
DATE_SUFFIX: Final = "#date"  # the per-session marker unit holding the date as given


class LocomoRagParams(SystemParams):
    mode: Literal["dialog", "observation", "summary"] = MODE_DIALOG
    top_k: int = Field(default=5, gt=0)


def dialog_text(speaker: str, text: str) -> str:
    return f'{speaker} said, "{text}"'


def observation_ids(raw: object) -> list[str]:
    """The dialogue ids an observation cites, as ``get_rag_context`` expands them."""
    if isinstance(raw, list):
        return [str(x) for x in raw]
    text = str(raw)
    return [s.strip() for s in text.split(",")] if "," in text else [text]


def session_units(haystack_id: str, hs: HaystackSession, mode: str) -> list[MemoryUnit]:
    """The session's database entries under ``mode`` (none for an empty session)."""
    s = hs.session
    if not hs.turns:
        return []

    def unit(unit_id: str, turn_ids: tuple[str, ...], text: str, kind: str) -> MemoryUnit:
        return MemoryUnit(unit_id, haystack_id, s.session_key, hs.position, turn_ids, text, s.datetime, "session",
                          kind)  # fmt: skip

    if mode == MODE_DIALOG:
        return [unit(t.turn_id, (t.turn_id,), dialog_text(t.speaker, t.text), KIND_TURN) for t in hs.turns]
    if mode == MODE_SUMMARY:
        return [unit(f"{s.session_key}#summary", (), s.summary, KIND_SUMMARY)] if s.summary else []
    by_dia = {t.source_id: t.turn_id for t in hs.turns if t.source_id}
    rows = json.loads(s.observations) if s.observations else []
    return [unit(f"{s.session_key}#obs{i}", tuple(by_dia[d] for d in observation_ids(ids) if d in by_dia), fact,
                 KIND_NOTE) for i, (_speaker, fact, ids) in enumerate(rows)]  # fmt: skip


class LocomoRagMemory:
    """One of LoCoMo's RAG databases for one conversation; top-k entries by inner product."""

    params_model = LocomoRagParams
    version = 1
    kind = KIND
    uses_encoder = True
    uses_llm = False

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.params = parse_params(self.params_model, params, KIND)
        self.encoder = require_encoder(deps, KIND)
        self.units: list[MemoryUnit] = []
        self.dates: dict[str, MemoryUnit] = {}  # session key -> its date marker (date as given: the context's prefix)
        self._vectors: np.ndarray | None = None

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        s = session.session
        marker = MemoryUnit(f"{s.session_key}{DATE_SUFFIX}", haystack_id, s.session_key, session.position, (),
                            s.datetime_raw or "", s.datetime, "session", KIND_SESSION)  # fmt: skip
        added = [marker, *session_units(haystack_id, session, self.params.mode)]
        self.restore([*self.units, *self.dates.values(), *added])
        return added

    def restore(self, units: list[MemoryUnit]) -> None:
        """Entries and the session-date markers (checkpointed like entries, so a resumed run's
        context carries the dates as given)."""
        self.dates = {u.session_key: u for u in units if u.unit_id.endswith(DATE_SUFFIX)}
        self.units = [u for u in units if not u.unit_id.endswith(DATE_SUFFIX)]
        self._vectors = None

    def _date(self, unit: MemoryUnit) -> str:
        marker = self.dates.get(unit.session_key)
        return marker.text if marker is not None else ""

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        ranked: list[tuple[int, float]] = []
        if self.units:
            if self._vectors is None:
                self._vectors = np.asarray(self.encoder.encode([u.text for u in self.units]), dtype=np.float32)
            query = np.asarray(self.encoder.encode([question.question]), dtype=np.float32)[0]
            scores = np.dot(query, self._vectors.T)
            ranked = [(int(i), float(scores[i])) for i in np.argsort(scores)[::-1][: self.params.top_k]]
        hits = [self.units[i] for i, _ in ranked]
        joiner = "\n\n" if self.params.mode == MODE_SUMMARY else "\n"
        context = joiner.join(f"{self._date(u)}: {u.text}" for u in hits)
        return RetrievalResult(
            units=tuple(retrieved(self.units[i], rank, s) for rank, (i, s) in enumerate(ranked, start=1)),
            context=context,
            context_tokens=count_tokens(context),
            notes={"protocol": "LoCoMo task_eval/evaluate_gpts.py prepare_for_rag + get_rag_context",
                   "mode": self.params.mode, "top_k": self.params.top_k, "index_units": len(self.units)},
        )  # fmt: skip
