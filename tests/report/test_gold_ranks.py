"""The drill-down's gold ranks: the best rank at which each gold unit was retrieved, computed in SQL
(GOLD_RANKS_SQL) and folded per gold label (``_gold_ranks``). Hand-checked tables."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.report.questions import GOLD_RANKS_SQL, _gold_ranks

UNIT = "STRUCT(rank INTEGER, session_key VARCHAR, turn_ids VARCHAR[], text VARCHAR)"


@pytest.fixture()
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE evidence (dataset VARCHAR, partition_key VARCHAR, level VARCHAR, unit_id VARCHAR)")
    con.execute(f"CREATE TABLE retrievals (dataset VARCHAR, partition_key VARCHAR, unit VARCHAR, units {UNIT}[])")
    con.execute(
        "INSERT INTO evidence VALUES ('d', 'q1', 'turn', 's1:2'), ('d', 'q1', 'turn', 's1:2'), "
        "('d', 'q1', 'turn', 's9:0'), ('d', 'q2', 'session', 's2'), ('x', 'q1', 'turn', 's1:0')"
    )
    units_q1 = [
        {"rank": 1, "session_key": "s3", "turn_ids": ["s3:0"], "text": "a"},
        {"rank": 2, "session_key": "s1", "turn_ids": None, "text": "a summary"},  # derived: no turns
        {"rank": 3, "session_key": "s1", "turn_ids": ["s1:1", "s1:2"], "text": "b"},
        {"rank": 5, "session_key": "s1", "turn_ids": ["s1:2"], "text": "c"},
    ]
    units_q2 = [
        {"rank": 1, "session_key": "s4", "turn_ids": ["s4:0"], "text": "d"},
        {"rank": 4, "session_key": "s2", "turn_ids": ["s2:3"], "text": "e"},
    ]
    con.execute("INSERT INTO retrievals VALUES ('d', 'q1', 'rag', ?), ('d', 'q1', 'empty', []), ('d', 'q2', 'rag', ?)",
                [units_q1, units_q2])  # fmt: skip
    return con


def test_best_rank_per_gold_unit(con: duckdb.DuckDBPyConnection) -> None:
    rows = sorted(con.execute(GOLD_RANKS_SQL, {"ds": "d"}).fetchall())
    # s1:2 first held by the rank-3 unit (also at 5); s9:0 never retrieved: no row; the gold session
    # s2 through the unit whose session_key it is; dataset "x" and the empty retrieval add nothing
    assert rows == [("q1", "rag", "s1:2", 3), ("q2", "rag", "s2", 4)]


@pytest.mark.parametrize(
    ("ranks", "labels", "expected"),
    [
        ({}, {}, {}),
        ({}, {"s1:2": "S1:2"}, {"S1:2": None}),
        ({"s1:2": 3}, {"s1:2": "S1:2", "s9:0": "S9:0"}, {"S1:2": 3, "S9:0": None}),
        ({"a": 7, "b": 2}, {"a": "same", "b": "same"}, {"same": 2}),  # two ids, one label: the best
        ({"a": 2, "b": 7}, {"a": "same", "b": "same"}, {"same": 2}),
        ({"a": 4}, {"a": "same", "b": "same"}, {"same": 4}),
    ],
)
def test_gold_ranks_fold_per_label(
    ranks: dict[str, int], labels: dict[str, str], expected: dict[str, int | None]
) -> None:
    assert _gold_ranks(ranks, labels) == expected
