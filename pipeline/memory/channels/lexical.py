"""BM25 channel over the ``bm25s`` library (Okapi BM25, k1 = 1.2, b = 0.75).

Why bm25s rather than a hand-rolled scorer: a sparse, tested implementation whose parameters are
explicit. Variant ``lucene`` (bm25s' default): IDF(t) = ln(1 + (N - df + 0.5) / (df + 0.5)) and
tf part f / (f + k1*(1 - b + b*|d|/avgdl)); bm25s (like Lucene 8+) drops the constant (k1 + 1)
numerator factor, which we multiply back so scores equal the seed's formula
sum IDF * f*(k1+1) / (f + k1*(1 - b + b*|d|/avgdl)) exactly (ranking is unchanged either way).
Text is lower-cased, split on ``\\b\\w\\w+\\b``, English stop words removed and Snowball-stemmed
(PyStemmer), the same analyzer for documents and queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import Stemmer

K1 = 1.2
B = 0.75
METHOD = "lucene"


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def tokenize(texts: Sequence[str], stem: bool = True) -> list[list[str]]:
    """The analyzer shared by index and query (lower, stop words, optional Snowball stem)."""
    import bm25s  # with scipy: on first use, not by every definitions load

    return bm25s.tokenize(
        list(texts),
        stopwords="en",
        stemmer=_stemmer() if stem else None,
        return_ids=False,
        show_progress=False,
    )


class BM25Index:
    """A BM25 index over a fixed list of documents; ``scores(query)`` is one float per document."""

    def __init__(self, docs: Sequence[str], k1: float = K1, b: float = B, stem: bool = True) -> None:
        self.k1, self.b, self.stem = k1, b, stem
        self.n_docs = len(docs)
        import bm25s

        self._bm25 = bm25s.BM25(k1=k1, b=b, method=METHOD)
        tokens = tokenize(docs, stem)
        self._empty = not any(tokens)
        if self.n_docs and not self._empty:
            self._bm25.index(tokens, show_progress=False)
            self._vocab = self._bm25.vocab_dict

    def query_terms(self, query: str) -> list[str]:
        """The query's analyzed terms that occur in the index (others cannot score)."""
        if self._empty or not self.n_docs:
            return []
        return [t for t in tokenize([query], self.stem)[0] if t in self._vocab]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (zeros when no query term is indexed)."""
        terms = self.query_terms(query)
        if not terms:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float32) * np.float32(self.k1 + 1)
