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
from itertools import chain

import numpy as np
import pandas as pd

K1 = 1.5
B = 0.75
EPSILON = 0.25


def tokenize(text: str) -> list[str]:
    """LongMemEval's BM25 tokens: ``text.split(" ")`` (case and punctuation kept)."""
    return text.split(" ")


DENSE_CELLS = 1 << 24  # documents x vocabulary up to which document counts use a dense bool matrix (16 MB)


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
    idf_values: np.ndarray  # float64, the idf of each word id (vocabulary order)
    k1: float = K1
    b: float = B

    @classmethod
    def build(cls, docs: Sequence[Sequence[str]], k1: float = K1, b: float = B, epsilon: float = EPSILON) -> OkapiIndex:
        """The index of tokenized ``docs`` (at least one document).

        The vocabulary is numbered in first-seen order over the corpus (the order the word-by-word
        loop of rank_bm25 builds it in), so the mean idf sums in that order; each word's document
        count comes from the token ids (``document_counts``), not from a dict per document.
        """
        if not docs:
            raise ValueError("a BM25 index needs at least one document")
        tokens = list(chain.from_iterable(docs))
        token_ids, vocabulary = first_seen_ids(tokens)
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
        doc_of = np.repeat(np.arange(len(docs), dtype=np.int64), lengths)
        counts = document_counts(token_ids, doc_of, len(docs), len(vocabulary))
        idf = _idf(counts, len(docs), epsilon)
        return cls(vocabulary, token_ids, doc_of, lengths, len(tokens) / len(docs), idf, k1, b)

    def idf(self, word: str) -> float | None:
        """The idf of ``word`` (None outside the vocabulary)."""
        i = self.vocabulary.get(word)
        return None if i is None else float(self.idf_values[i])

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
            score += (self.idf(token) or 0) * (tf * (self.k1 + 1) / (tf + norm))
        return score


def first_seen_ids(tokens: list[str]) -> tuple[np.ndarray, dict[str, int]]:
    """Each token's word id (int64) and the vocabulary (word -> id), words numbered in first-seen order.

    Why ``pandas.factorize``: it numbers the values in order of first appearance (the order
    ``dict.fromkeys`` gives) in one pass of a C hash table, where a vocabulary dict and a lookup of
    every token through it hashed each token twice in Python; the ids and the vocabulary's order
    are the same. Tokens are always ``str`` (``tokenize``), never a missing value, so no token takes
    factorize's missing-value code.
    """
    codes, words = pd.factorize(np.array(tokens, dtype=object))
    vocabulary = dict(zip(words.tolist(), range(len(words)), strict=True))
    return codes.astype(np.int64, copy=False), vocabulary


def document_counts(token_ids: np.ndarray, doc_of: np.ndarray, n_docs: int, n_words: int) -> np.ndarray:
    """How many documents hold each word id (int64, id order).

    Why from the ids: counting each document's distinct words through Python dicts and a Counter
    hashed every token twice more and was the largest part of an index's build. A (document, word)
    pair is marked once in a bool matrix while it fits ``DENSE_CELLS``; a larger corpus takes the
    distinct pairs by sorting (``np.unique``). Both give the same integers.
    """
    if n_docs * n_words <= DENSE_CELLS:
        held = np.zeros((n_docs, n_words), dtype=bool)
        held[doc_of, token_ids] = True
        return np.count_nonzero(held, axis=0).astype(np.int64)
    pairs = np.unique(doc_of * n_words + token_ids)
    return np.bincount(pairs % n_words, minlength=n_words)


def _idf(doc_count: np.ndarray, n_docs: int, epsilon: float) -> np.ndarray:
    """Okapi idf per word id; negative values floored to ``epsilon`` times the mean idf.

    A word's idf depends only on how many documents hold it: each count that occurs is taken once
    (``math.log``, as rank_bm25), and the mean adds every word's value one after the other in
    vocabulary order (``cumsum`` is that sequential sum, unlike ``sum``'s pairwise one).
    """
    if not len(doc_count):
        return np.zeros(0)
    by_count = np.zeros(n_docs + 1)
    present = np.unique(doc_count).tolist()
    by_count[present] = [math.log(n_docs - n + 0.5) - math.log(n + 0.5) for n in present]
    values = by_count[doc_count]
    total = float(np.cumsum(values)[-1])
    values[values < 0] = epsilon * (total / len(values))
    return values


def argsort_order(scores: np.ndarray) -> list[int]:
    """Document indices best first, as LongMemEval takes them: ``argsort(scores)[::-1]``."""
    order: list[int] = np.argsort(scores)[::-1].tolist()
    return order
