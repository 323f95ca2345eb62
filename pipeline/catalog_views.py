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
    import pipeline.report.views  # noqa: F401 - registers the report view creators

    names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    created: list[str] = []
    for fn in _CREATORS:
        try:
            created += fn(con, names | set(created))
        except duckdb.Error as exc:
            # a report view that cannot bind (e.g. a table written by an older version) must not
            # sink a run: the base tables stay queryable and the failure is named in the catalog.
            name = getattr(fn, "__name__", str(fn)).replace("'", "''")
            error = str(exc).replace("'", "''")
            con.execute(f"CREATE OR REPLACE VIEW catalog_errors AS SELECT '{name}' AS view_creator, '{error}' AS error")
    return created
