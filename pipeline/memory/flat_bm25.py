"""``flat_bm25``: LongMemEval's ``flat-bm25`` retriever as a memory system.

Follows xiaowu0162/LongMemEval ``src/retrieval/run_retrieval.py`` (``process_item_flat_index`` for
the corpus, ``run_flat_retrieval`` with ``retriever='flat-bm25'`` for the ranking): the corpus of
pipeline.memory.flat_corpus, BM25Okapi over ``split(" ")`` tokens of documents and question
(pipeline.memory.okapi), ranked by ``argsort(scores)[::-1]``. Rankings equal the official code's
document for document (tests/memory/test_flat_retrievers_parity.py, LongMemEval_S, both granularities).
Each ranked unit carries its BM25 score in the ``bm25`` column.
"""

from __future__ import annotations

from pydantic import Field

from pipeline.memory.flat_corpus import FlatMemory, FlatParams
from pipeline.memory.okapi import EPSILON, K1, B, OkapiIndex, argsort_order, tokenize

KIND = "flat_bm25"
PROTOCOL = "LongMemEval src/retrieval/run_retrieval.py flat-bm25 (rank_bm25 0.2.2 BM25Okapi, split(' ') tokens)"


class FlatBm25Params(FlatParams):
    k1: float = Field(default=K1, gt=0)
    b: float = Field(default=B, ge=0, le=1)
    epsilon: float = Field(default=EPSILON, ge=0)


class FlatBm25Memory(FlatMemory):
    """BM25 over the flat corpus; the index is built on the first question after a change."""

    params_model = FlatBm25Params
    kind = KIND
    uses_encoder = False
    score_column = "bm25"  # each ranked unit's BM25 score, not a ``semantic`` one

    def _changed(self) -> None:
        self._index: OkapiIndex | None = None

    def index(self) -> OkapiIndex:
        if self._index is None:
            p = self.params
            assert isinstance(p, FlatBm25Params)
            self._index = OkapiIndex.from_texts([u.text for u in self.units], p.k1, p.b, p.epsilon)
        return self._index

    def ranking(self, question: str) -> list[tuple[int, float]]:
        scores = self.index().scores(tokenize(question))
        order = argsort_order(scores)
        return list(zip(order, scores[order].tolist(), strict=True))

    def notes(self) -> dict[str, object]:
        return {"protocol": PROTOCOL}
