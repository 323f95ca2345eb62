"""The BM25 channel applies Okapi BM25 with k1 = 1.2, b = 0.75 (Lucene IDF), checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.memory.channels.lexical import K1, B, BM25Index, tokenize

DOCS = ["apple banana apple", "banana cherry", "cherry cherry cherry durian"]


def _bm25(term_freqs: list[dict[str, int]], query: list[str], k1: float, b: float) -> list[float]:
    """The seed's formula with Lucene's IDF ln(1 + (N - df + 0.5) / (df + 0.5))."""
    n = len(term_freqs)
    lengths = [sum(tf.values()) for tf in term_freqs]
    avgdl = sum(lengths) / n
    out = []
    for tf, dl in zip(term_freqs, lengths, strict=True):
        s = 0.0
        for t in query:
            df = sum(1 for d in term_freqs if t in d)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            f = tf.get(t, 0)
            s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl))
        out.append(s)
    return out


TF = [{"appl": 2, "banana": 1}, {"banana": 1, "cherri": 1}, {"cherri": 3, "durian": 1}]


def test_defaults_are_the_seed_parameters() -> None:
    assert (K1, B) == (1.2, 0.75)


@pytest.mark.parametrize(
    ("query", "terms"),
    [("apple", ["appl"]), ("cherries and bananas", ["cherri", "banana"]), ("banana durian", ["banana", "durian"])],
)
def test_scores_match_hand_formula(query: str, terms: list[str]) -> None:
    idx = BM25Index(DOCS)
    assert idx.query_terms(query) == terms
    np.testing.assert_allclose(idx.scores(query), _bm25(TF, terms, 1.2, 0.75), rtol=1e-5)


def test_k1_and_b_are_applied() -> None:
    for k1, b in [(2.0, 0.75), (1.2, 0.0), (0.5, 1.0)]:
        got = BM25Index(DOCS, k1=k1, b=b).scores("cherry")
        np.testing.assert_allclose(got, _bm25(TF, ["cherri"], k1, b), rtol=1e-5)
    assert not np.allclose(BM25Index(DOCS, k1=2.0).scores("cherry"), BM25Index(DOCS).scores("cherry"))


def test_stop_words_and_unknown_terms_score_zero() -> None:
    idx = BM25Index(DOCS)
    assert tokenize(["The cat and the hat"]) == [["cat", "hat"]]
    assert idx.scores("the and of").tolist() == [0.0, 0.0, 0.0]
    assert idx.scores("zebra").tolist() == [0.0, 0.0, 0.0]


def test_unstemmed_analyzer_keeps_surface_forms() -> None:
    idx = BM25Index(DOCS, stem=False)
    assert idx.query_terms("apples apple") == ["apple"]


def test_empty_index() -> None:
    assert BM25Index([]).scores("apple").shape == (0,)
    assert BM25Index(["the of and"]).scores("apple").tolist() == [0.0]
