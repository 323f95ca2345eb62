"""The hybrid memory's state: turn units grown per session, heavy indexes built lazily.

Why split from the retrieval logic: ingestion must stay cheap and incremental (entity postings and
session adjacency grow with each ``ingest_session``), while the BM25 indexes, the vector matrix
and the graph's adjacency are built once at the first query and reused by every question asked of
the same haystack (LoCoMo asks ~199 per conversation). Ingesting more sessions drops the built
indexes; vectors already computed are kept and only new units are embedded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.memory.base import Encoder, MemoryUnit
from pipeline.memory.channels.entities import extract_entities
from pipeline.memory.channels.graph import GraphSpec, entity_edges, knn_edges, temporal_edges
from pipeline.memory.channels.lexical import BM25Index
from pipeline.memory.channels.semantic import normalize_rows
from pipeline.memory.hybrid_params import HybridParams


@dataclass(frozen=True)
class SessionRef:
    """A session of the memory: its key, haystack position, and its units' indices."""

    session_key: str
    position: int
    members: tuple[int, ...]


@dataclass
class BuiltIndex:
    """Everything a query needs; valid until the next ingestion."""

    turn_bm25: BM25Index | None
    session_bm25: BM25Index | None
    vectors: np.ndarray | None  # (n_units, dim), L2-normalized
    adjacency: np.ndarray | None  # (n_units, n_units) graph weights
    session_of: np.ndarray  # unit index -> session index
    sessions: tuple[SessionRef, ...]


def _body(unit: MemoryUnit) -> str:
    """Unit text without the ``speaker:`` prefix, so speaker names do not become entities."""
    head, sep, rest = unit.text.partition(": ")
    return rest if sep and len(head) <= 40 else unit.text


class HybridState:
    """Turn units in ingestion (time) order, their sessions and entity postings."""

    def __init__(self, params: HybridParams, encoder: Encoder | None) -> None:
        self.params = params
        self.encoder = encoder
        self.units: list[MemoryUnit] = []
        self._session_ids: dict[tuple[str, int], int] = {}
        self._session_members: list[list[int]] = []
        self._session_keys: list[tuple[str, int]] = []
        self._session_of: list[int] = []
        self.postings: dict[str, list[int]] = defaultdict(list)
        self._vectors: list[np.ndarray] = []
        self._built: BuiltIndex | None = None

    def add(self, units: Sequence[MemoryUnit]) -> None:
        """Append units (one session's turns): entity links and session adjacency grow here."""
        for unit in units:
            idx = len(self.units)
            skey = (unit.session_key, unit.session_position)
            sidx = self._session_ids.setdefault(skey, len(self._session_keys))
            if sidx == len(self._session_keys):
                self._session_keys.append(skey)
                self._session_members.append([])
            self._session_members[sidx].append(idx)
            self._session_of.append(sidx)
            self.units.append(unit)
            for entity in sorted(extract_entities(_body(unit))):  # sorted: no hash-order leak
                self.postings[entity].append(idx)
        if units:
            self._built = None

    def entity_cap(self) -> int:
        """Units an entity may appear in and still link them (the graph's frequency cap)."""
        return max(2, int(self.params.entity_max_df * len(self.units)))

    def entity_units(self, entities: frozenset[str]) -> list[int]:
        """Units naming any of ``entities`` (rarest entity first; frequent ones ignored).

        Ties between equally frequent entities are broken by the entity text: ``entities`` is a
        frozenset, whose iteration order follows the per-process string hash seed, and the first
        units of this list become graph seeds, so a hash-order tie-break made the ranking differ
        between processes.
        """
        cap = self.entity_cap()
        known = [(len(self.postings.get(e, ())), e) for e in entities]
        ordered = sorted((n, e) for n, e in known if 0 < n <= cap)
        return list(dict.fromkeys(i for _, e in ordered for i in self.postings[e]))

    def session_text(self, sidx: int) -> str:
        return "\n".join(self.units[i].text for i in self._session_members[sidx])

    def index(self) -> BuiltIndex:
        """The built indexes (built now if ingestion changed the memory since the last query)."""
        if self._built is None:
            self._built = self._build()
        return self._built

    # ---- building -------------------------------------------------------------------------
    def _needs_vectors(self) -> bool:
        p = self.params
        return p.channels.semantic or (p.channels.graph and p.knn > 0 and self.encoder is not None)

    def _embed_new(self) -> np.ndarray | None:
        if not self._needs_vectors() or self.encoder is None:
            return None
        done = sum(len(v) for v in self._vectors)
        if done < len(self.units):
            texts = [u.text for u in self.units[done:]]
            vecs = np.asarray(self.encoder.encode(texts), dtype=np.float32)
            if vecs.ndim != 2 or vecs.shape[0] != len(texts):
                raise ValueError(
                    f"encoder {self.encoder.model_name!r} returned shape {vecs.shape} for {len(texts)} texts"
                )
            self._vectors.append(normalize_rows(vecs))
        return np.concatenate(self._vectors) if self._vectors else np.zeros((0, 0), np.float32)

    def _bm25(self, docs: list[str]) -> BM25Index:
        p = self.params
        return BM25Index(docs, k1=p.bm25_k1, b=p.bm25_b, stem=p.bm25_stem)

    def _build(self) -> BuiltIndex:
        p = self.params
        vectors = self._embed_new()
        sessions = tuple(
            SessionRef(key, pos, tuple(members))
            for (key, pos), members in zip(self._session_keys, self._session_members, strict=True)
        )
        bm25_on = p.channels.bm25
        turn_bm25 = self._bm25([u.text for u in self.units]) if bm25_on else None
        session_bm25 = None
        if bm25_on and p.granularity == "session" and p.session_bm25 == "document":
            session_bm25 = self._bm25([self.session_text(i) for i in range(len(sessions))])
        adjacency = self._adjacency(vectors) if p.channels.graph else None
        return BuiltIndex(
            turn_bm25, session_bm25, vectors, adjacency, np.asarray(self._session_of, dtype=np.int64), sessions
        )

    def _adjacency(self, vectors: np.ndarray | None) -> np.ndarray:
        p = self.params
        spec = GraphSpec(
            entity_weight=p.entity_weight,
            entity_max_df=p.entity_max_df,
            entity_df_floor=2,
            temporal_weight=p.temporal_edge_weight,
            knn=p.knn,
            knn_min_sim=p.knn_min_sim,
        )
        n = len(self.units)
        weights = entity_edges(self.postings, n, spec) + temporal_edges(self._session_of, spec)
        if vectors is not None and vectors.shape[0] == n and n:
            weights += knn_edges(vectors, spec)
        return weights
