"""Graph edges and spreading activation on tiny hand graphs (values checked by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.memory.channels.graph import GraphSpec, entity_edges, knn_edges, spreading_activation, temporal_edges


def _path_graph() -> np.ndarray:
    # 0 - 1 - 2 (weight 1), 3 isolated
    w = np.zeros((4, 4))
    w[0, 1] = w[1, 0] = w[1, 2] = w[2, 1] = 1.0
    return w


def test_activation_path_graph_by_hand() -> None:
    # P rows: 0 -> [0,1,0,0]; 1 -> [.5,0,.5,0]; 2 -> [0,1,0,0]
    # a0 = [1, 0, 0, 0]; a1 = 0.85 * P^T a0 = [0, .85, 0, 0]; a2 = 0.85 * P^T a1 = [.36125, 0, .36125, 0]
    got = spreading_activation(_path_graph(), {0: 1.0}, damping=0.85, hops=2)
    np.testing.assert_allclose(got, [1.36125, 0.85, 0.36125, 0.0])


def test_activation_one_hop_and_three_hops() -> None:
    np.testing.assert_allclose(spreading_activation(_path_graph(), {0: 1.0}, 0.85, hops=1), [1, 0.85, 0, 0])
    # a3 = 0.85 * P^T a2 = 0.85 * [0, .36125*1 + .36125*1, 0, 0] = [0, .614125, 0, 0]
    got = spreading_activation(_path_graph(), {0: 1.0}, 0.85, hops=3)
    np.testing.assert_allclose(got, [1.36125, 0.85 + 0.614125, 0.36125, 0.0])


def test_activation_weighted_edges_split_in_proportion() -> None:
    # star: 0 -> 1 (w 3), 0 -> 2 (w 1): node 0 sends 3/4 and 1/4 of 0.85
    w = np.zeros((3, 3))
    w[0, 1] = w[1, 0] = 3.0
    w[0, 2] = w[2, 0] = 1.0
    got = spreading_activation(w, {0: 2.0}, damping=0.5, hops=1)
    np.testing.assert_allclose(got, [2.0, 0.75, 0.25])


def test_activation_two_seeds_add_and_validate_damping() -> None:
    got = spreading_activation(_path_graph(), {0: 1.0, 2: 1.0}, damping=0.85, hops=1)
    np.testing.assert_allclose(got, [1, 1.7, 1, 0])
    # an isolated seed keeps its own activation and passes nothing on
    np.testing.assert_allclose(spreading_activation(_path_graph(), {3: 0.5}, 0.85, hops=2), [0, 0, 0, 0.5])
    with pytest.raises(ValueError):
        spreading_activation(_path_graph(), {0: 1.0}, damping=1.5)


def test_entity_edges_and_frequency_cap() -> None:
    postings = {"rachel": [0, 2], "paris": [0, 1, 2], "x": [3]}
    w = entity_edges(postings, 4, GraphSpec(entity_max_df=0.5, entity_df_floor=2))
    # cap = max(2, int(0.5 * 4)) = 2: "paris" (3 units) is dropped, "rachel" links 0-2
    expected = np.zeros((4, 4))
    expected[0, 2] = expected[2, 0] = 1.0
    np.testing.assert_array_equal(w, expected)
    w = entity_edges(postings, 4, GraphSpec(entity_max_df=1.0, entity_weight=0.5))
    assert w[0, 2] == 1.0 and w[0, 1] == 0.5 and w[1, 2] == 0.5  # 0-2 share two entities


def test_temporal_edges_link_neighbouring_turns_of_a_session() -> None:
    w = temporal_edges([0, 0, 0, 1, 1], GraphSpec(temporal_weight=0.5))
    pairs = {(int(i), int(j)) for i, j in zip(*np.nonzero(w), strict=True)}
    assert pairs == {(0, 1), (1, 0), (1, 2), (2, 1), (3, 4), (4, 3)}
    assert w[0, 1] == 0.5


def test_knn_edges_weight_is_cosine_and_threshold_applies() -> None:
    v = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]], dtype=np.float32)
    w = knn_edges(v, GraphSpec(knn=1, knn_min_sim=0.5))
    # 0's nearest: 1 (0.8); 1's nearest: 0 or 2 (0.8 / 0.6 -> 0); 2's nearest: 1 (0.6)
    np.testing.assert_allclose(w, [[0, 0.8, 0], [0.8, 0, 0.6], [0, 0.6, 0]], rtol=1e-6)
    assert knn_edges(v, GraphSpec(knn=1, knn_min_sim=0.7))[1, 2] == 0.0
