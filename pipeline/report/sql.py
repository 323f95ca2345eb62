"""Small DuckDB helpers shared by the report modules."""

from __future__ import annotations

from typing import Any

import duckdb


def query_rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> list[dict[str, Any]]:
    """Rows of ``sql`` as dicts (through Arrow: nested lists/structs come back as Python objects)."""
    return con.sql(sql, params=params).to_arrow_table().to_pylist()


def view_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
