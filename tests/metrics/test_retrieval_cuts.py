"""The report's fast paths of the ranking metrics give the pinned definitions' exact bits.

Each Ranked widens its cut once per k (``Ranked.cut``), ``dcg`` skips zero relevances and
``score_ranking`` cuts each k once for its four metrics; the
references below are the definitions as they were written before (a fresh ``effective_k`` per
metric, every term summed), compared by ``float.hex``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest

from pipeline.metrics.retrieval import (
    EVIDENCE_RECALL_CONTEXT,
    K_VALUES,
    Ranked,
    dcg,
    effective_k,
    evidence_recall,
    evidence_recall_at_k,
    metric_column,
    metric_columns,
    ndcg_any_at_k,
    recall_all_at_k,
    recall_any_at_k,
    score_ranking,
)


def _dcg_every_term(relevances: Sequence[float]) -> float:
    if not relevances:
        return 0.0
    return float(relevances[0]) + sum(float(r) / math.log2(p + 1) for p, r in enumerate(relevances) if p >= 1)


def _reference_scores(ranked: Ranked, context: Ranked, gold: frozenset[str], ks: Sequence[int]) -> dict[str, float]:
    """score_ranking of a Ranked as the module computed it: the cut widened anew by every metric."""
    out: dict[str, float] = {}
    for k in ks:
        top = set(ranked.ids[: effective_k(ranked.ids, k)])
        out[metric_column("recall_any", k)] = float(any(g in top for g in gold))
        out[metric_column("recall_all", k)] = float(all(g in top for g in gold))
        cut = effective_k(ranked.ids, k)
        actual = _dcg_every_term([1.0 if u in gold else 0.0 for u in ranked.ids[:cut]])
        ideal = _dcg_every_term([1.0] * min(ranked.n_relevant, cut))
        out[metric_column("ndcg_any", k)] = actual / ideal if ideal else 0.0
        out[metric_column("evidence_recall", k)] = len(gold & set(ranked.ids[: effective_k(ranked.ids, k)])) / len(gold)
    out[EVIDENCE_RECALL_CONTEXT] = len(gold & set(context.ids)) / len(gold)
    return out


@pytest.mark.parametrize(
    "relevances",
    [
        [],
        [0.0],
        [1.0],
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 1.0, 0.0, 0.0, 1.0],
        [0.0, 1.0, 1.0],
        [-0.0, 0.0, 1.0],
        [1.0, -0.0, -0.0],
        [0.5, 0.0, 0.25, 0.0, 3.0],
        [1.0] * 60,
        [0.0] * 40 + [1.0] + [0.0] * 40,
    ],
)
def test_dcg_without_its_zero_terms_keeps_every_bit(relevances: list[float]) -> None:
    assert dcg(relevances).hex() == _dcg_every_term(relevances).hex()


def test_dcg_keeps_every_bit_on_random_relevances() -> None:
    rng = random.Random(11)
    for _ in range(2000):
        rels = [rng.choice((0.0, 0.0, 0.0, 1.0, -0.0, 0.5)) for _ in range(rng.randrange(0, 300))]
        assert dcg(rels).hex() == _dcg_every_term(rels).hex(), rels


@pytest.mark.parametrize(
    ("ids", "k", "expected"),
    [
        (("a", "a", "b", "c"), 1, 1),
        (("a", "a", "b", "c"), 2, 3),
        (("a", "a", "b", "c"), 3, 4),
        (("a", "a", "b"), 3, 4),
        (("a", "b"), 5, 5),
        ((), 1, 1),
    ],
)
def test_ranked_cut_is_effective_k_once_per_k(ids: tuple[str, ...], k: int, expected: int) -> None:
    ranked = Ranked(ids, 1)
    assert ranked.cut(k) == expected == effective_k(ids, k)
    assert ranked.cut(k) == expected  # from the memo
    assert ranked == Ranked(ids, 1) and repr(ranked) == repr(Ranked(ids, 1))  # the memo is not part of the value


def test_score_ranking_of_turn2session_rankings_equals_the_definitions() -> None:
    """Random session labels (repeats, ``noans:`` labels, rankings shorter than k) at every K_VALUES."""
    rng = random.Random(5)
    sessions = [f"s{i}" for i in range(60)] + [f"noans:s{i}" for i in range(10)]
    for _ in range(400):
        ids = tuple(rng.choice(sessions) for _ in range(rng.randrange(0, 260)))
        gold = frozenset(rng.sample(sessions[:60], rng.randrange(1, 4)))
        ranked = Ranked(ids, rng.randrange(1, 6))
        context = Ranked(ids[: rng.randrange(0, len(ids) + 1)], ranked.n_relevant)
        got = score_ranking(ranked, context, gold, K_VALUES)
        want = _reference_scores(Ranked(ids, ranked.n_relevant), context, gold, K_VALUES)
        assert {c: v.hex() for c, v in got.items()} == {c: v.hex() for c, v in want.items()}


@pytest.mark.parametrize("ks", [K_VALUES, (1,), (2, 7, 100), (50, 1)])
def test_score_ranking_of_plain_rankings_equals_each_metric(ks: tuple[int, ...]) -> None:
    """A plain id ranking (turn or session ids) scored by ``score_ranking``, each k's cut made once,
    equals each metric function called alone, by ``float.hex``, in the same key order; gold
    given as a list with repeats counts as its set."""
    rng = random.Random(7)
    ids = [f"t{i}" for i in range(80)]
    for _ in range(300):
        ranking = rng.sample(ids, rng.randrange(0, 80))
        gold = [rng.choice(ids) for _ in range(rng.randrange(1, 5))]
        context = ranking[: rng.randrange(0, len(ranking) + 1)]
        got = score_ranking(ranking, context, gold, ks)
        want: dict[str, float] = {}
        for k in ks:
            want[metric_column("recall_any", k)] = recall_any_at_k(ranking, gold, k)
            want[metric_column("recall_all", k)] = recall_all_at_k(ranking, gold, k)
            want[metric_column("ndcg_any", k)] = ndcg_any_at_k(ranking, gold, k)
            want[metric_column("evidence_recall", k)] = evidence_recall_at_k(ranking, gold, k)
        want[EVIDENCE_RECALL_CONTEXT] = evidence_recall(context, gold)
        assert list(got) == list(want) and set(got) == set(metric_columns(ks))  # the order it always had
        assert {c: v.hex() for c, v in got.items()} == {c: v.hex() for c, v in want.items()}


@pytest.mark.parametrize(("gold", "k"), [([], 5), (["a"], 0)])
def test_score_ranking_refuses_what_the_metrics_refuse(gold: list[str], k: int) -> None:
    with pytest.raises(ValueError):
        score_ranking(["a", "b"], ["a"], gold, (k,))
