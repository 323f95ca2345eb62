"""Exact cosine search over unit embeddings (faiss ``IndexFlatIP`` on L2-normalized vectors).

Why flat (exact) search: a haystack holds at most a few thousand units, where exact search takes
milliseconds and approximate indexes would only add recall noise to a retrieval benchmark. The
index grows lazily: units added by ingestion are embedded on the first query, so ingesting a
haystack never pays for embeddings a run does not use, and a restored memory embeds once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from pipeline.memory.base import Encoder, MemoryDeps, MemoryUnit
from pipeline.memory.params import MemoryConfigError, ParamsInput, SystemParams, parse_params

if TYPE_CHECKING:
    import faiss

P = TypeVar("P", bound=SystemParams)


class VectorIndex:
    """Units and their vectors; ``search`` returns (unit, cosine) best first."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.units: list[MemoryUnit] = []
        self._pending: list[MemoryUnit] = []
        self._index: faiss.IndexFlatIP | None = None
        self.order: dict[str, int] = {}  # unit_id -> ingestion order (time-order tie-break)

    def __len__(self) -> int:
        return len(self.units) + len(self._pending)

    def add(self, units: Sequence[MemoryUnit]) -> None:
        for u in units:
            self.order.setdefault(u.unit_id, len(self.order))
        self._pending.extend(units)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        vecs = np.ascontiguousarray(self.encoder.encode(list(texts)), dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != len(texts):
            raise ValueError(f"encoder {self.encoder.model_name!r} returned shape {vecs.shape} for {len(texts)} texts")
        import faiss  # imported by the first search, not by every definitions load (0.1-0.2 s)

        faiss.normalize_L2(vecs)  # the protocol promises unit vectors; IP = cosine only if so
        return vecs

    def build(self) -> None:
        """Embed and index the units added since the last build (called by ``search`` too)."""
        if not self._pending:
            return
        vecs = self._embed([u.text for u in self._pending])
        if self._index is None:
            import faiss

            self._index = faiss.IndexFlatIP(vecs.shape[1])
        self._index.add(vecs)
        self.units.extend(self._pending)
        self._pending = []

    def search(self, query: str, k: int) -> list[tuple[MemoryUnit, float]]:
        self.build()
        if self._index is None or k <= 0:
            return []
        scores, ids = self._index.search(self._embed([query]), min(k, len(self.units)))
        return [(self.units[i], float(s)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]


class LazyEncoder:
    """An Encoder that builds the real one on first use.

    Why: ingestion of ``rag``/``summaries`` only records units (they embed at retrieval), so the
    ingestion stage should not pay for loading a sentence-transformer it never calls.
    """

    def __init__(self, model_name: str, factory: Callable[[], Encoder]) -> None:
        self.model_name = model_name
        self._factory = factory
        self._encoder: Encoder | None = None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self._encoder is None:
            self._encoder = self._factory()
        return self._encoder.encode(texts)


def require_encoder(deps: MemoryDeps, kind: str) -> Encoder:
    """The encoder of ``deps``; a memory that embeds cannot run without one (config error)."""
    if deps.encoder is None:
        raise MemoryConfigError(f"memory system kind {kind!r} needs an embedding encoder; none was given")
    return deps.encoder


class VectorMemory(Generic[P]):
    """What the embedding-indexed memories (rag, summaries, notes) share: strict params of
    ``params_model``, a required encoder, one flat index, and a restore that embeds at once
    (so the first question's latency is retrieval only). Subclasses decide what a unit is."""

    kind: str  # plain attributes (set in the subclass body) like the MemorySystem protocol's members
    params_model: type[Any]
    uses_encoder = True
    uses_llm = False

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.params: P = parse_params(self.params_model, params, self.kind)
        self.index = VectorIndex(require_encoder(deps, self.kind))

    def restore(self, units: list[MemoryUnit]) -> None:
        self.index.add(list(units))
        self.index.build()
