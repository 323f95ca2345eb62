"""The memory-checkpoint views (``product_sessions``, ``agent_memory_log``) are skipped from the
checkpoints' footers when no checkpoint can hold their kind, and made as before otherwise.

Why: finding out by a scan cost a ``union_by_name`` bind and a read of every checkpoint per view
and connection (~0.6 s of a 2,000-question run's end) for views then dropped in every run without a
product or agent memory. The footer's statistics of the ``kind`` column say the same, read once per
file in a process; a file they cannot speak for (no statistics) leaves the scan to decide.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.catalog import products
from pipeline.catalog.agentic import KIND_OP, create_agent_memory_log
from pipeline.catalog.products import KIND_PRODUCT_SESSION, checkpoints_may_hold, create_product_views
from pipeline.memory.base import MemoryUnit
from pipeline.memory.checkpoint import MEMORY_UNIT_SCHEMA, Checkpoint, CheckpointState, save, units_to_table

WHEN = dt.datetime(2023, 1, 1)


def _unit(haystack: str, kind: str, n: int = 0) -> MemoryUnit:
    text = '{"llm_calls": 1, "tool": "remember"}'
    return MemoryUnit(f"{haystack}:{n}", haystack, "s0", 0, (), text, WHEN, "assistant", kind)


def _checkpoint(parquet: Path, system: str, haystack: str, *kinds: str) -> Path:
    path = parquet / "memory" / system / "lme" / f"{haystack}.parquet"
    units = [_unit(haystack, k, n) for n, k in enumerate(kinds)]
    save(path, Checkpoint(CheckpointState(system, "full_context", "x", "f", 1, 1, 1.0), units))
    return path


class Recording:
    """A connection that records the SQL run through it (to see whether the checkpoints were scanned)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.sql = con, list[str]()

    def execute(self, sql: str, *args: Any) -> duckdb.DuckDBPyConnection:
        self.sql.append(sql)
        return self.con.execute(sql, *args)


@pytest.fixture
def con(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    c = duckdb.connect(":memory:")
    c.execute("SET file_search_path = ?", [str(tmp_path)])
    yield c
    c.close()


def _views(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}


def _made(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str], list[str]]:
    """What each creator made, and the SQL they ran."""
    rec = Recording(con)
    made = create_product_views(rec, set(), "parquet")  # type: ignore[arg-type]
    made += create_agent_memory_log(rec, set(), "parquet")  # type: ignore[arg-type]
    return made, sorted(_views(con)), rec.sql


def test_no_scan_when_no_checkpoint_holds_the_kinds(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    for h in ("h1", "h2", "h3"):
        _checkpoint(tmp_path / "parquet", "full_context", h, "turn", "turn")
    made, views, sql = _made(con)
    assert (made, views) == ([], [])
    assert not [s for s in sql if "read_parquet" in s]  # decided from the footers


def test_no_checkpoint_at_all(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    assert _made(con)[:2] == ([], [])


@pytest.mark.parametrize(("kind", "view"), [(KIND_PRODUCT_SESSION, "product_sessions"), (KIND_OP, "agent_memory_log")])
def test_a_checkpoint_holding_the_kind_makes_the_view(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, kind: str, view: str
) -> None:
    _checkpoint(tmp_path / "parquet", "full_context", "h1", "turn")
    _checkpoint(tmp_path / "parquet", "mine", "h2", "note", kind, "zzz")  # kind between the bounds
    made, views, _ = _made(con)
    assert made == [view] and views == [view]
    assert con.execute(f"SELECT count(*) FROM {view}").fetchall() == [(1,)]


def test_bounds_that_include_the_kind_leave_the_scan_to_decide(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    """'a' <= 'agent_op', 'product_session' <= 'z': the footer cannot rule them out, the scan finds none."""
    _checkpoint(tmp_path / "parquet", "full_context", "h1", "a", "z")
    made, views, sql = _made(con)
    assert (made, views) == ([], [])
    assert len([s for s in sql if "read_parquet" in s]) == 2


def test_a_file_without_statistics_is_scanned(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "parquet" / "memory" / "mine" / "lme" / "h1.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(units_to_table([_unit("h1", KIND_PRODUCT_SESSION)]), path, write_statistics=False)
    assert checkpoints_may_hold(con, "parquet", KIND_PRODUCT_SESSION)
    assert _made(con)[0] == ["product_sessions"]


def test_an_empty_checkpoint_holds_nothing(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "parquet" / "memory" / "mine" / "lme" / "h1.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([], schema=MEMORY_UNIT_SCHEMA), path)
    assert not checkpoints_may_hold(con, "parquet", KIND_PRODUCT_SESSION)
    assert _made(con)[:2] == ([], [])


def test_footers_read_once_a_file_and_a_replaced_file_again(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Path] = []
    real = products.read_footer

    def counting(path: Path) -> pq.FileMetaData:
        reads.append(Path(path))
        return real(path)

    monkeypatch.setattr(products, "read_footer", counting)
    paths = [_checkpoint(tmp_path / "parquet", "full_context", h, "turn") for h in ("h1", "h2")]
    for _ in range(3):
        assert not checkpoints_may_hold(con, "parquet", KIND_PRODUCT_SESSION)
        assert not checkpoints_may_hold(con, "parquet", KIND_OP)
    assert sorted(reads) == sorted(paths)
    _checkpoint(tmp_path / "parquet", "full_context", "h2", "turn", KIND_OP)  # rewritten: a new inode
    assert checkpoints_may_hold(con, "parquet", KIND_OP)
    assert checkpoints_may_hold(con, "parquet", KIND_OP)
    assert sorted(reads) == sorted([*paths, paths[1]])


def test_a_search_path_of_several_folders_is_scanned(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    _checkpoint(tmp_path / "parquet", "full_context", "h1", "turn")
    con.execute("SET file_search_path = ?", [f"{tmp_path},{tmp_path / 'other'}"])
    assert checkpoints_may_hold(con, "parquet", KIND_PRODUCT_SESSION)
    assert not checkpoints_may_hold(con, str(tmp_path / "parquet"), KIND_PRODUCT_SESSION)
