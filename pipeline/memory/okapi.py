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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

K1 = 1.5
B = 0.75
EPSILON = 0.25
SPACE = b" "  # the one separator of ``tokenize``; in UTF-8 the byte 0x20 is only ever U+0020


def tokenize(text: str) -> list[str]:
    """LongMemEval's BM25 tokens: ``text.split(" ")`` (case and punctuation kept)."""
    return text.split(" ")


def encoded(texts: Iterable[str]) -> pa.Array:
    """Texts as UTF-8 bytes (``surrogatepass``: a lone surrogate, legal in a ``str``, encodes too).

    Why bytes: the encoding is one-to-one, so two words are equal exactly when their bytes are,
    and splitting the bytes at 0x20 gives each ``split(" ")`` token's bytes (no other code point
    holds that byte in UTF-8, surrogatepass included): Arrow then splits and numbers the tokens
    without a Python object per token.
    """
    return pa.array([t.encode("utf-8", "surrogatepass") for t in texts], pa.large_binary())


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

    words: pa.Array  # large_binary: each word id's UTF-8 bytes (``encoded``), in first-seen order
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
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
        return cls._of_tokens(encoded(chain.from_iterable(docs)), lengths, k1, b, epsilon)

    @classmethod
    def from_texts(cls, texts: Sequence[str], k1: float = K1, b: float = B, epsilon: float = EPSILON) -> OkapiIndex:
        """The index of ``texts`` tokenized by ``tokenize``: the same index as ``build`` of their tokens.

        Why not ``build``: a Python ``str`` per token (``split``), hashed once more to number it, was
        most of an index's cost on LongMemEval_S (~10k tokens a corpus, ~1,000 corpora a run); Arrow
        splits the texts' bytes at each space and numbers the tokens in C, first seen first.
        """
        if not texts:
            raise ValueError("a BM25 index needs at least one document")
        lists = pc.split_pattern(encoded(texts), SPACE)
        lengths = np.diff(lists.offsets.to_numpy()).astype(np.int64)
        return cls._of_tokens(lists.flatten(), lengths, k1, b, epsilon)

    @classmethod
    def _of_tokens(cls, tokens: pa.Array, lengths: np.ndarray, k1: float, b: float, epsilon: float) -> OkapiIndex:
        """The index of the corpus's ``tokens`` (``encoded``, documents in order, ``lengths`` each)."""
        token_ids, words = first_seen_ids(tokens)
        doc_of = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        counts = document_counts(token_ids, doc_of, len(lengths), len(words))
        idf = _idf(counts, len(lengths), epsilon)
        return cls(words, token_ids, doc_of, lengths, len(tokens) / len(lengths), idf, k1, b)

    @cached_property
    def vocabulary(self) -> dict[str, int]:
        """Word -> id, in first-seen order (made when asked: scoring looks its words up in ``words``)."""
        words = (w.decode("utf-8", "surrogatepass") for w in self.words.to_pylist())
        return dict(zip(words, range(len(self.words)), strict=True))

    def slots(self, words: Sequence[str]) -> np.ndarray:
        """For each word id, the position of its word in ``words`` (distinct words), else -1.

        Why this way round: the few query words make a small hash table that the vocabulary is
        probed against in C, where a table of the whole vocabulary would be made for every query.
        """
        found = pc.index_in(self.words, value_set=encoded(words)).fill_null(-1)
        slot: np.ndarray = found.to_numpy().astype(np.int64)
        return slot

    def idf(self, word: str) -> float | None:
        """The idf of ``word`` (None outside the vocabulary)."""
        ids = np.flatnonzero(self.slots([word]) >= 0)
        return float(self.idf_values[ids[0]]) if len(ids) else None

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for the tokenized ``query`` (float64, corpus order).

        Each query word's frequency in every document comes from one sweep over the token ids (a
        (word, document) pair per matching token, one ``bincount``; zeros for a word outside the
        vocabulary); the terms are then added one query token after the other (a repeated token
        again), as the official code adds them: the same integers, the same float operations.
        """
        n_docs = len(self.doc_len)
        distinct = list(dict.fromkeys(query))
        slot = self.slots(distinct)
        held = slot >= 0
        word_of = np.full(len(distinct), -1, dtype=np.int64)  # each distinct query word's id, -1 unknown
        word_of[slot[held]] = np.flatnonzero(held)
        hit = slot[self.token_ids]
        matched = hit >= 0
        pairs = hit[matched] * n_docs + self.doc_of[matched]
        tfs = np.bincount(pairs, minlength=len(distinct) * n_docs).reshape(len(distinct), n_docs)
        idf = np.array([(float(self.idf_values[i]) if i >= 0 else None) or 0.0 for i in word_of.tolist()])
        norm = self.k1 * (1 - self.b + self.b * self.doc_len / self.avgdl)
        terms = idf[:, None] * (tfs * (self.k1 + 1) / (tfs + norm))  # each element as the official term
        score = np.zeros(n_docs)
        position = {word: j for j, word in enumerate(distinct)}
        for token in query:
            score += terms[position[token]]
        return score


def first_seen_ids(tokens: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Each token's word id (int64) and the words by id, numbered in first-seen order.

    Why Arrow's ``dictionary_encode``: its hash table gives each new value the next index, so the
    ids are the ones a first-seen dict gives (``dict.fromkeys``), in one pass in C. The tokens are
    ``encoded`` bytes, never null, so every token gets an id.
    """
    encoding = tokens.dictionary_encode()
    return encoding.indices.to_numpy().astype(np.int64), encoding.dictionary


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
