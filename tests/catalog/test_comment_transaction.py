"""The catalog's ``COMMENT ON`` statements run as one transaction, with the effect of running them
one by one.

Why: each statement on its own is a commit, and a commit of the catalog file writes and syncs its
write-ahead log; ~540 of them took ~2 s wall at a 2,000-question run's end. A failing statement
must still leave the comments before it and raise its error (the catalog records it), as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import duckdb
import pytest

from pipeline.catalog.docs import VIEW_DOCS, comment_catalog, run_in_one_transaction


class Recorder:
    """A connection that records what it is asked to run (DuckDB's own type cannot be patched)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.sql: list[str] = []

    def execute(self, sql: str, *args: Any) -> duckdb.DuckDBPyConnection:
        self.sql.append(sql)
        return self.con.execute(sql, *args)


def _catalog(path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    con.execute("CREATE VIEW answers AS SELECT 'q1' AS partition_key, 'ok' AS status")
    con.execute("CREATE VIEW judgments AS SELECT 'q1' AS partition_key, true AS correct")
    return con


def test_the_comments_are_one_transaction(tmp_path: Path) -> None:
    con = _catalog(tmp_path / "c.duckdb")
    recorder = Recorder(con)
    comment_catalog(cast(duckdb.DuckDBPyConnection, recorder))
    comments = [i for i, s in enumerate(recorder.sql) if s.startswith("COMMENT ON")]
    assert len(comments) == 6  # two views, four columns
    begin, commit = recorder.sql.index("BEGIN TRANSACTION"), recorder.sql.index("COMMIT")
    assert begin < comments[0] and comments[-1] < commit
    assert recorder.sql.count("BEGIN TRANSACTION") == 1
    views = dict(con.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
    assert views == {"answers": VIEW_DOCS["answers"], "judgments": VIEW_DOCS["judgments"]}
    cols = con.execute("SELECT count(*) FROM duckdb_columns() WHERE comment IS NOT NULL").fetchall()
    assert cols == [(4,)]


def test_a_failing_statement_keeps_those_before_it_and_raises(tmp_path: Path) -> None:
    con = _catalog(tmp_path / "c.duckdb")
    statements = [
        "COMMENT ON VIEW answers IS 'a'",
        "COMMENT ON VIEW no_such_view IS 'b'",
        "COMMENT ON VIEW judgments IS 'c'",
    ]
    with pytest.raises(duckdb.CatalogException):
        run_in_one_transaction(con, statements)
    views = dict(con.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
    assert views == {"answers": "a", "judgments": None}
