"""The drill-down's gold ranks: the best rank at which each gold unit was retrieved, computed in SQL
in the same scan of ``retrievals`` as the top units (RETRIEVALS_GOLD_SQL) and folded per gold label
(``_gold_ranks``). Hand-checked tables."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.report.questions import RETRIEVALS_GOLD_SQL, RETRIEVALS_SQL, TEXT_CHARS, TOP_UNITS, _gold_ranks

UNIT = "STRUCT(rank INTEGER, session_key VARCHAR, turn_ids VARCHAR[], text VARCHAR)"


@pytest.fixture()
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE evidence (dataset VARCHAR, partition_key VARCHAR, level VARCHAR, unit_id VARCHAR)")
    con.execute(
        "CREATE TABLE retrievals (dataset VARCHAR, partition_key VARCHAR, unit VARCHAR, status VARCHAR, error VARCHAR,"
        f" context_tokens BIGINT, units {UNIT}[])"
    )
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
    con.execute("INSERT INTO retrievals VALUES ('d', 'q1', 'rag', 'ok', NULL, 9, ?), "
                "('d', 'q1', 'empty', 'ok', NULL, 0, []), ('d', 'q2', 'rag', 'ok', NULL, 5, ?), "
                "('d', 'q3', 'rag', 'failed', 'boom', NULL, NULL)", [units_q1, units_q2])  # fmt: skip
    return con


def _read(con: duckdb.DuckDBPyConnection, sql: str) -> dict[tuple[str, str], dict]:
    rows = con.sql(sql, params={"ds": "d", "top": TOP_UNITS, "chars": TEXT_CHARS}).to_arrow_table().to_pylist()
    return {(r["partition_key"], r["system"]): r for r in rows}


def test_best_rank_per_gold_unit(con: duckdb.DuckDBPyConnection) -> None:
    rows = _read(con, RETRIEVALS_GOLD_SQL)
    # s1:2 first held by the rank-3 unit (also at 5); s9:0 never retrieved: not listed; the gold session
    # s2 through the unit whose session_key it is; dataset "x", the empty and the failed retrieval add nothing
    assert {key: r["gold_ranks"] for key, r in rows.items()} == {
        ("q1", "rag"): [{"unit_id": "s1:2", "rank": 3}],
        ("q1", "empty"): [],
        ("q2", "rag"): [{"unit_id": "s2", "rank": 4}],
        ("q3", "rag"): None,  # no evidence: no gold to rank
    }


def test_the_gold_ranks_come_with_the_rows_of_the_plain_read(con: duckdb.DuckDBPyConnection) -> None:
    with_gold, plain = _read(con, RETRIEVALS_GOLD_SQL), _read(con, RETRIEVALS_SQL)
    assert {key: {k: v for k, v in r.items() if k != "gold_ranks"} for key, r in with_gold.items()} == plain
    assert [u["rank"] for u in plain[("q1", "rag")]["top"]] == [1, 2, 3, 5]


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
