"""BEAM's event-ordering score: Kendall tau-b (normalised) x F1 over aligned items (pure functions).

Definitions, as BEAM's ``src/evaluation/compute_metrics.py`` (``event_ordering_score``) computes
them once the reply's lines are aligned with the rubric items (the alignment itself asks an LLM,
pipeline/judges/beam.py; here ``system`` is the aligned list: a matched line replaced by the
rubric item it matched, an unmatched line kept as it is):

- ``tp`` = distinct items in both lists; ``fp`` = entries of ``system`` not in ``reference``
  (counted with repeats); ``fn`` = entries of ``reference`` not in ``system``; precision, recall
  and F1 from them, each 0 when its denominator is 0;
- ranks over the union of both lists (reference first, first appearance order): an item's rank in
  a list is its LAST position there + 1, an item absent from it gets ``len(union) + 1``;
- tau-b of the two rank vectors (ties on both sides corrected): ``(C - D) / sqrt(n0 - n1) /
  sqrt(n0 - n2)`` with ``n0`` = pairs, ``n1`` / ``n2`` = pairs tied in the first / second vector,
  clipped to [-1, 1], divided in that order as SciPy's ``kendalltau`` does (so the float is the
  same to the last bit); undefined (None) when a vector is constant or has fewer than 2 entries,
  where SciPy answers NaN;
- ``tau_norm = (tau_b + 1) / 2``; ``final_score = tau_norm * f1`` (None when tau-b is undefined).

Why None and not NaN: the official code lets that NaN through to its per-ability average, which
becomes NaN; membench keeps the question out of the mean instead (verdict "not applicable") and
says so in the judgment's details.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two equally long vectors; None when undefined."""
    if len(x) != len(y):
        raise ValueError(f"tau-b of vectors of different lengths ({len(x)} and {len(y)})")
    n = len(x)
    pairs = n * (n - 1) // 2
    concordant_minus_discordant = tied_x = tied_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            tied_x += dx == 0
            tied_y += dy == 0
            if dx != 0 and dy != 0:
                concordant_minus_discordant += 1 if (dx > 0) == (dy > 0) else -1
    if pairs == 0 or tied_x == pairs or tied_y == pairs:
        return None
    tau = concordant_minus_discordant / math.sqrt(pairs - tied_x) / math.sqrt(pairs - tied_y)
    return min(1.0, max(-1.0, tau))


def last_position_ranks(sequence: Sequence[str], union: Sequence[str]) -> list[int]:
    """Each union item's rank in ``sequence``: its last position + 1, or ``len(union) + 1`` if absent."""
    last = {item: i + 1 for i, item in enumerate(sequence)}
    absent = len(union) + 1
    return [last.get(item, absent) for item in union]


@dataclass(frozen=True)
class OrderingScore:
    """Every figure of one event-ordering answer."""

    precision: float
    recall: float
    f1: float
    tau_b: float | None
    tau_norm: float | None
    final_score: float | None


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def ordering_score(reference: Sequence[str], system: Sequence[str]) -> OrderingScore:
    """The figures of an ALIGNED system list against the reference items (module docstring)."""
    tp = len(set(reference) & set(system))
    fp = sum(item not in reference for item in system)
    fn = sum(item not in system for item in reference)
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    union = list(dict.fromkeys([*reference, *system]))
    tau = kendall_tau_b(last_position_ranks(reference, union), last_position_ranks(system, union))
    tau_norm = None if tau is None else (tau + 1) / 2
    return OrderingScore(precision, recall, f1, tau, tau_norm, None if tau_norm is None else tau_norm * f1)
