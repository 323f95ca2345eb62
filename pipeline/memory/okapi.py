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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

K1 = 1.5
B = 0.75
EPSILON = 0.25


def tokenize(text: str) -> list[str]:
    """LongMemEval's BM25 tokens: ``text.split(" ")`` (case and punctuation kept)."""
    return text.split(" ")


@dataclass(frozen=True)
class OkapiIndex:
    """The statistics of one corpus (token ids, lengths, idf) and its scoring.

    Why token ids and no per-document dicts: a query reads the frequencies of its own few tokens
    only, and building a dict per document (rank_bm25's way) was most of the cost of an index on
    LongMemEval_S (one per question and granularity, ~10k tokens each). Each token of the corpus is
    numbered by its word's first-seen position (``token_ids``, with ``doc_of`` its document); a query
    token's frequency in every document is one ``bincount``. The values are the same integers.
    """

    vocabulary: dict[str, int]  # word -> id, in first-seen order
    token_ids: np.ndarray  # every token of the corpus, documents in order
    doc_of: np.ndarray  # the document of each token
    doc_len: np.ndarray
    avgdl: float
    idf: dict[str, float]
    k1: float = K1
    b: float = B

    @classmethod
    def build(cls, docs: Sequence[Sequence[str]], k1: float = K1, b: float = B, epsilon: float = EPSILON) -> OkapiIndex:
        """The index of tokenized ``docs`` (at least one document).

        The document counts are taken over each document's distinct words in first-occurrence order
        (``dict.fromkeys``), so the vocabulary is in the order the word-by-word loop of rank_bm25
        builds it, and the mean idf sums in that order.
        """
        if not docs:
            raise ValueError("a BM25 index needs at least one document")
        doc_count = Counter(chain.from_iterable(map(dict.fromkeys, docs)))  # first-seen order
        vocabulary = {word: i for i, word in enumerate(doc_count)}
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
        total = int(lengths.sum())
        token_ids = np.fromiter(map(vocabulary.__getitem__, chain.from_iterable(docs)), dtype=np.int64, count=total)
        doc_of = np.repeat(np.arange(len(docs), dtype=np.int64), lengths)
        idf = _idf(doc_count, len(docs), epsilon)
        return cls(vocabulary, token_ids, doc_of, lengths, total / len(docs), idf, k1, b)

    def term_frequencies(self, word: str) -> np.ndarray:
        """How often ``word`` occurs in each document (int64, corpus order; zeros when unknown)."""
        i = self.vocabulary.get(word)
        if i is None:
            return np.zeros(len(self.doc_len), dtype=np.int64)
        return np.bincount(self.doc_of[self.token_ids == i], minlength=len(self.doc_len))

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for the tokenized ``query`` (float64, corpus order)."""
        score = np.zeros(len(self.doc_len))
        norm = self.k1 * (1 - self.b + self.b * self.doc_len / self.avgdl)
        tfs: dict[str, np.ndarray] = {}
        for token in query:
            tf = tfs.get(token)
            if tf is None:
                tf = tfs[token] = self.term_frequencies(token)
            score += (self.idf.get(token) or 0) * (tf * (self.k1 + 1) / (tf + norm))
        return score


def _idf(doc_count: dict[str, int], n_docs: int, epsilon: float) -> dict[str, float]:
    """Okapi idf per word; negative values floored to ``epsilon`` times the mean idf.

    A word's idf depends only on how many documents hold it: each count's value is taken once
    (``math.log``, as rank_bm25), and the mean adds every word's value one after the other in
    vocabulary order (``cumsum`` is that sequential sum, unlike ``sum``'s pairwise one).
    """
    if not doc_count:
        return {}
    by_count = np.array([math.log(n_docs - n + 0.5) - math.log(n + 0.5) for n in range(n_docs + 1)])
    counts = np.fromiter(doc_count.values(), dtype=np.int64, count=len(doc_count))
    values = by_count[counts]
    total = float(np.cumsum(values)[-1])
    values[values < 0] = epsilon * (total / len(values))
    return dict(zip(doc_count, values.tolist(), strict=True))


def argsort_order(scores: np.ndarray) -> list[int]:
    """Document indices best first, as LongMemEval takes them: ``argsort(scores)[::-1]``."""
    return [int(i) for i in np.argsort(scores)[::-1]]
