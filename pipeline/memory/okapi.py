"""Okapi BM25 scores as LongMemEval's ``flat-bm25`` retriever computes them.

LongMemEval (``src/retrieval/run_retrieval.py``, ``run_flat_retrieval``) tokenizes every text with
``str.split(" ")`` (no lower-casing, no punctuation stripping; runs of spaces give empty tokens,
which count), scores with the ``rank_bm25`` package's ``BM25Okapi`` (version 0.2.2, k1 = 1.5,
b = 0.75, epsilon = 0.25) and ranks with ``numpy.argsort(scores)[::-1]``. This module is
membench's own implementation of that variant, written from its definition:

- idf(w) = ln(N - n(w) + 0.5) - ln(n(w) + 0.5), N documents, n(w) documents containing w; a
  negative idf is replaced by epsilon * (mean idf over the vocabulary);
- score(d, q) = sum over query tokens t (repeats count again) of
  idf(t) * f(t, d) * (k1 + 1) / (f(t, d) + k1 * (1 - b + b * |d| / avgdl)); a query token outside
  the vocabulary adds 0.

Why the operations are spelled in that order (the mean idf summed in first-seen vocabulary order,
one numpy array expression per query token): rankings must equal the official ones position by
position, and that includes ties and near-ties, so the floats must be the same bits. The ranking
is ``argsort(scores)[::-1]`` exactly as the official code takes it: among equal scores the order
is numpy's, which the official ranking has too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

K1 = 1.5
B = 0.75
EPSILON = 0.25


def tokenize(text: str) -> list[str]:
    """LongMemEval's BM25 tokens: ``text.split(" ")`` (case and punctuation kept)."""
    return text.split(" ")


@dataclass(frozen=True)
class OkapiIndex:
    """The statistics of one corpus (term frequencies, lengths, idf) and its scoring."""

    term_freqs: tuple[dict[str, int], ...]
    doc_len: np.ndarray
    avgdl: float
    idf: dict[str, float]
    k1: float = K1
    b: float = B

    @classmethod
    def build(cls, docs: Sequence[Sequence[str]], k1: float = K1, b: float = B, epsilon: float = EPSILON) -> OkapiIndex:
        """The index of tokenized ``docs`` (at least one document)."""
        if not docs:
            raise ValueError("a BM25 index needs at least one document")
        freqs: list[dict[str, int]] = []
        doc_count: dict[str, int] = {}  # documents holding each word, in first-seen order
        total = 0
        for doc in docs:
            counts: dict[str, int] = {}
            for word in doc:
                counts[word] = counts.get(word, 0) + 1
            freqs.append(counts)
            total += len(doc)
            for word in counts:
                doc_count[word] = doc_count.get(word, 0) + 1
        idf = _idf(doc_count, len(docs), epsilon)
        return cls(tuple(freqs), np.array([len(d) for d in docs]), total / len(docs), idf, k1, b)

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for the tokenized ``query`` (float64, corpus order)."""
        score = np.zeros(len(self.term_freqs))
        norm = self.k1 * (1 - self.b + self.b * self.doc_len / self.avgdl)
        for token in query:
            tf = np.array([d.get(token) or 0 for d in self.term_freqs])
            score += (self.idf.get(token) or 0) * (tf * (self.k1 + 1) / (tf + norm))
        return score


def _idf(doc_count: dict[str, int], n_docs: int, epsilon: float) -> dict[str, float]:
    """Okapi idf per word; negative values floored to ``epsilon`` times the mean idf."""
    idf: dict[str, float] = {}
    total = 0.0
    negative: list[str] = []
    for word, n in doc_count.items():
        value = math.log(n_docs - n + 0.5) - math.log(n + 0.5)
        idf[word] = value
        total += value
        if value < 0:
            negative.append(word)
    floor = epsilon * (total / len(idf)) if idf else 0.0
    for word in negative:
        idf[word] = floor
    return idf


def argsort_order(scores: np.ndarray) -> list[int]:
    """Document indices best first, as LongMemEval takes them: ``argsort(scores)[::-1]``."""
    return [int(i) for i in np.argsort(scores)[::-1]]
