"""Extra DuckDB views defined over the base tables (reports). Each creator skips itself when the
tables it needs are absent, so the catalog can be rebuilt after any stage."""

from __future__ import annotations

from collections.abc import Callable

import duckdb

ViewCreator = Callable[[duckdb.DuckDBPyConnection, set[str]], list[str]]
_CREATORS: list[ViewCreator] = []


def register_view_creator(fn: ViewCreator) -> ViewCreator:
    _CREATORS.append(fn)
    return fn


def create_report_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    created: list[str] = []
    for fn in _CREATORS:
        created += fn(con, names | set(created))
    return created
