"""Reciprocal rank fusion: combine channel rankings without normalizing their scores.

Why RRF: channel scores live on incomparable scales (cosine in [-1, 1], BM25 unbounded,
activation mass, recency decay); ranks are comparable. RRF(m) = sum_i w_i / (k + rank_i(m)),
k = 60 (Cormack et al. 2009), rank 1-based; a unit absent from a channel's ranking gets nothing
from it. Per-channel weights ``w_i`` default to 1 (the plain formula of seed 003).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)

RRF_K = 60


def rrf(
    rankings: Mapping[str, Sequence[K]],
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> dict[K, float]:
    """Fused score per item: ``sum over channels of weight / (k + 1-based rank)``."""
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k}")
    fused: dict[K, float] = {}
    for channel, ranking in rankings.items():
        w = 1.0 if weights is None else float(weights.get(channel, 1.0))
        if w == 0.0:
            continue
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + w / (k + rank)
    return fused


def rank_items(scores: Mapping[K, float]) -> list[K]:
    """Items by score, best first; ties keep the mapping's insertion order (stable sort)."""
    return sorted(scores, key=lambda item: -scores[item])


def ranking_from_array(scores: np.ndarray, mask: np.ndarray | None = None, limit: int | None = None) -> list[int]:
    """Indices of ``scores`` best first (stable on ties), restricted to ``mask`` when given.

    Why a mask rather than a threshold: a channel ranks only the units it has evidence for (BM25:
    some query term matched; temporal: inside the window); the rest are absent from its ranking,
    which is what RRF expects (a unit a channel knows nothing about earns nothing from it).
    """
    idx = np.flatnonzero(mask) if mask is not None else np.arange(len(scores))
    order = idx[np.argsort(-scores[idx], kind="stable")]
    return order[:limit].tolist() if limit is not None else order.tolist()
