"""Semantic channel: cosine similarity between the query vector and every unit vector.

Why re-normalize here: the Encoder protocol promises unit vectors, but a dot product is a cosine
only if that holds; normalizing twice costs nothing and keeps the score in [-1, 1] whatever
encoder is plugged in.
"""

from __future__ import annotations

import numpy as np


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)


def cosine_scores(query: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """cos(v_q, v_m) for every row m of ``matrix`` (shape (n, dim)) -> shape (n,)."""
    if matrix.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    q = normalize_rows(np.asarray(query, dtype=np.float32).reshape(1, -1))[0]
    return normalize_rows(matrix) @ q
