"""Memory graph and spreading activation (the graph channel of seed 003).

Nodes are memory units (turns). Undirected weighted edges, summed over three kinds:

- entity:   units sharing an extracted entity, ``entity_weight`` per shared entity; an entity held
            by more than ``max(entity_df_floor, entity_max_df * n)`` units is ignored (a speaker's
            name on every turn links everything and says nothing);
- temporal: consecutive turns of the same session, ``temporal_weight`` (conversational adjacency:
            an answer often sits in the turn after the one that matches the query);
- semantic: each unit's ``knn`` nearest neighbours by cosine (>= ``knn_min_sim``), weight = cosine.

Spreading activation (seed 003: activation(n, t+1) = sum_m activation(m, t) * w(m, n) * damping)
with one documented change: each node spreads its activation over its out-edges in proportion to
their weights (row-normalized W, as in personalized PageRank). Why: with raw weights a hub that
shares entities with 40 units would hand every one of them its full activation, so the ranking
would reward hubs instead of closeness to the seeds. The graph score of a unit is its total
activation over steps 0..``hops``: a seed keeps its initial activation. Why count it: measured on
LongMemEval_S, a graph channel that scored only what neighbours received voted in RRF for the
neighbours of the best match but never for the best match itself, pushing the consensus top unit
of the other channels below its neighbours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

DAMPING = 0.85


@dataclass(frozen=True)
class GraphSpec:
    """Edge construction parameters (defaults documented in the hybrid params schema)."""

    entity_weight: float = 1.0
    entity_max_df: float = 0.05
    entity_df_floor: int = 2
    temporal_weight: float = 0.5
    knn: int = 5
    knn_min_sim: float = 0.5


def entity_edges(postings: Mapping[str, Sequence[int]], n: int, spec: GraphSpec) -> np.ndarray:
    """n x n weights: ``entity_weight`` per entity two units share (frequent entities dropped)."""
    w = np.zeros((n, n), dtype=np.float32)
    cap = max(spec.entity_df_floor, int(spec.entity_max_df * n))
    for units in postings.values():
        ids = sorted(set(units))
        if len(ids) < 2 or len(ids) > cap:
            continue
        idx = np.array(ids)
        w[np.ix_(idx, idx)] += spec.entity_weight
    np.fill_diagonal(w, 0.0)
    return w


def temporal_edges(session_of: Sequence[int], spec: GraphSpec) -> np.ndarray:
    """n x n weights linking consecutive units (ingestion order) of the same session."""
    n = len(session_of)
    w = np.zeros((n, n), dtype=np.float32)
    for i in range(n - 1):
        if session_of[i] == session_of[i + 1]:
            w[i, i + 1] = w[i + 1, i] = spec.temporal_weight
    return w


def knn_edges(vectors: np.ndarray, spec: GraphSpec) -> np.ndarray:
    """n x n weights: cosine to each unit's ``knn`` nearest neighbours, symmetrized by max."""
    n = vectors.shape[0]
    w = np.zeros((n, n), dtype=np.float32)
    if n < 2 or spec.knn <= 0:
        return w
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    k = min(spec.knn, n - 1)
    nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    rows = np.repeat(np.arange(n), k)
    cols = nearest.ravel()
    vals = sims[rows, cols]
    keep = vals >= spec.knn_min_sim
    w[rows[keep], cols[keep]] = vals[keep]
    return np.maximum(w, w.T)


def spreading_activation(
    weights: np.ndarray,
    seeds: Mapping[int, float],
    damping: float = DAMPING,
    hops: int = 2,
) -> np.ndarray:
    """Total activation of each node over ``hops`` propagation steps from ``seeds``.

    a_0 = seed activations; a_{t+1} = damping * P^T a_t with P the row-normalized weights
    (a node without edges passes nothing on); score = a_0 + a_1 + ... + a_hops.
    """
    n = weights.shape[0]
    if not 0.0 <= damping <= 1.0:
        raise ValueError(f"damping must be in [0, 1], got {damping}")
    out = weights.sum(axis=1, keepdims=True)
    transition = np.divide(weights, out, out=np.zeros_like(weights, dtype=np.float64), where=out > 0)
    act = np.zeros(n, dtype=np.float64)
    for node, value in seeds.items():
        act[node] += value
    total = act.copy()
    for _ in range(hops):
        act = damping * (transition.T @ act)
        total += act
    return total
