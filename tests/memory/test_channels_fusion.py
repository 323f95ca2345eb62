"""RRF (seed 003) and score -> ranking conversion, on hand-checked values."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.memory.channels.fusion import rank_items, ranking_from_array, rrf


def test_rrf_seed_worked_example() -> None:
    # seed 003: m1 ranked Semantic=2, Lexical=1, Graph=2, Temporal=3 -> 1/62 + 1/61 + 1/62 + 1/63
    rankings = {
        "semantic": ["m3", "m1", "m7"],
        "bm25": ["m1", "m3", "m2"],
        "graph": ["m7", "m1", "m3"],
        "temporal": ["m2", "m3", "m1"],
    }
    fused = rrf(rankings, k=60)
    assert fused["m1"] == pytest.approx(1 / 62 + 1 / 61 + 1 / 62 + 1 / 63)
    assert round(fused["m1"], 4) == 0.0645
    # m3: ranks 1, 2, 3, 2 -> 1/61 + 1/62 + 1/63 + 1/62
    assert fused["m3"] == pytest.approx(1 / 61 + 1 / 62 + 1 / 63 + 1 / 62)
    # the seed's fused order [m1, m3, m7, m2]: m1 and m3 tie exactly (same multiset of ranks)
    assert fused["m1"] == pytest.approx(fused["m3"])
    assert fused["m7"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["m2"] == pytest.approx(1 / 63 + 1 / 61)
    assert rank_items(fused)[:2] in (["m1", "m3"], ["m3", "m1"])


@pytest.mark.parametrize(
    ("k", "weights", "expected_a"),
    [
        (60, None, 1 / 61 + 1 / 62),
        (0, None, 1 / 1 + 1 / 2),
        (60, {"x": 2.0, "y": 0.5}, 2 / 61 + 0.5 / 62),
        (60, {"x": 0.0}, 1 / 62),  # weight 0 = channel ignored
    ],
)
def test_rrf_k_and_weights(k: int, weights: dict | None, expected_a: float) -> None:
    fused = rrf({"x": ["a", "b"], "y": ["b", "a"]}, k=k, weights=weights)
    assert fused["a"] == pytest.approx(expected_a)


def test_rrf_absent_item_gets_nothing_from_that_channel() -> None:
    fused = rrf({"x": ["a"], "y": ["b", "a"]})
    assert fused == pytest.approx({"a": 1 / 61 + 1 / 62, "b": 1 / 61})


def test_rrf_rejects_negative_k() -> None:
    with pytest.raises(ValueError, match="k must be >= 0"):
        rrf({"x": ["a"]}, k=-1)


def test_ranking_from_array_mask_limit_and_stable_ties() -> None:
    scores = np.array([0.5, 2.0, 0.5, 0.0, 1.0])
    assert ranking_from_array(scores) == [1, 4, 0, 2, 3]
    assert ranking_from_array(scores, scores > 0) == [1, 4, 0, 2]
    assert ranking_from_array(scores, scores > 0, limit=2) == [1, 4]
