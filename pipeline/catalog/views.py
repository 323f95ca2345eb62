"""Extra DuckDB views defined over the base tables (reports), and the user objects kept across
catalog rebuilds. Each view creator skips itself when the tables it needs are absent, so the
catalog can be rebuilt after any stage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb

from pipeline.catalog.agentic import create_agent_memory_log, create_agentic_views
from pipeline.catalog.docs import comment_catalog
from pipeline.catalog.losses import create_loss_views
from pipeline.catalog.official import create_official_views
from pipeline.catalog.probes import create_probe_views
from pipeline.catalog.products import create_product_views
from pipeline.catalog.repeats import create_repeat_views
from pipeline.catalog.report import create_accuracy_views, create_retrieval_views
from pipeline.metrics.stats import MACROS

# (connection, views defined so far, ``parquet``) -> views created. ``parquet``: the folder of the Parquet
# files the base views read (the catalog's or a connection's fixed set of hard links,
# pipeline/store/catalog_files.py), as a path relative to the connection's ``file_search_path``.
# Why passed in: a creator that reads files itself (the memory checkpoints) must read that same fixed
# set; a hard-coded ``parquet/...`` resolved, in the catalog, to the live files that runs replace.
ViewCreator = Callable[[duckdb.DuckDBPyConnection, set[str], str], list[str]]


def comment_views(con: duckdb.DuckDBPyConnection, tables: set[str], parquet: str) -> list[str]:
    """``COMMENT ON`` every view and column (pipeline/catalog/docs.py): the catalog describes itself.

    Last in ``CATALOG_VIEWS``, so that it sees every view the creators before it made.
    """
    comment_catalog(con)
    return []


# The catalog's views beyond the base tables, in order: the explicit list every ResultStore runs.
# Why a list and not registration on import: which views a connection has must not depend on what
# the process happened to import (``membench sql`` once saw 15 of 23 views).
CATALOG_VIEWS: tuple[ViewCreator, ...] = (
    create_retrieval_views,
    create_accuracy_views,
    create_loss_views,
    create_official_views,
    create_repeat_views,
    create_agentic_views,
    create_agent_memory_log,
    create_product_views,
    create_probe_views,
    comment_views,
)


def view_creator_names(creators: tuple[ViewCreator, ...] = CATALOG_VIEWS) -> list[str]:
    """Qualified names of the view creators: part of what the catalog is built from."""
    return [f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}" for fn in creators]


def create_report_views(
    con: duckdb.DuckDBPyConnection, parquet: str, creators: tuple[ViewCreator, ...] = CATALOG_VIEWS
) -> list[str]:
    """Run every view creator over the base tables already defined in ``con``, whose files are under
    ``parquet`` (see ``ViewCreator``)."""
    names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    created: list[str] = []
    for fn in creators:
        try:
            created += fn(con, names | set(created), parquet)
        except duckdb.Error as exc:
            # a report view that cannot bind (e.g. a table written by an older version) must not
            # sink a run: the base tables stay queryable and the failure is named in the catalog.
            name = getattr(fn, "__name__", str(fn)).replace("'", "''")
            error = str(exc).replace("'", "''")
            con.execute(f"CREATE OR REPLACE VIEW catalog_errors AS SELECT '{name}' AS view_creator, '{error}' AS error")
    return created


# ---- user objects in results.duckdb ---------------------------------------------------------
USER_DATABASE = "user.duckdb"  # next to results.duckdb; membench never writes it
_OLD = "membench_old_catalog"


class CatalogKept(RuntimeError):
    """The old ``results.duckdb`` was not replaced (it is locked, or holds objects we cannot copy)."""


def _objects(con: duckdb.DuckDBPyConnection, database: str) -> dict[str, list[tuple[str, str, str | None]]]:
    """(schema, name, sql) of the tables, views and other user-creatable objects of ``database``."""
    q = "SELECT schema_name, {name}, {sql} FROM {fn}() WHERE database_name = ?{extra}"
    found: dict[str, list[tuple[str, str, str | None]]] = {}
    for kind, name, sql, fn, extra in (
        ("table", "table_name", "sql", "duckdb_tables", " AND NOT internal"),
        ("view", "view_name", "sql", "duckdb_views", " AND NOT internal"),
        ("sequence", "sequence_name", "sql", "duckdb_sequences", ""),
        ("type", "type_name", "NULL", "duckdb_types", " AND NOT internal"),
    ):
        rows = con.execute(q.format(name=name, sql=sql, fn=fn, extra=extra), [database]).fetchall()
        found[kind] = [(s, n, d) for s, n, d in rows]
    macros = con.execute(
        "SELECT DISTINCT schema_name, function_name, NULL FROM duckdb_functions() "
        "WHERE database_name = ? AND NOT internal AND function_type IN ('macro', 'table_macro')",
        [database],
    ).fetchall()
    found["macro"] = [(s, n, d) for s, n, d in macros]
    return found


def keep_user_objects(con: duckdb.DuckDBPyConnection, old_catalog: Path) -> list[str]:
    """Copy the tables and views a user created in ``old_catalog`` into the new catalog ``con``.

    Why: ``results.duckdb`` is rebuilt under a temp name and renamed over the old file on every
    refresh; a table a user saved there (``CREATE TABLE my_picks AS ...``) used to vanish
    silently. Membench creates only views and macros, all rebuilt in ``con`` before this runs, so
    every table of the old file, and every view or macro whose name the new catalog does not
    define, is the user's. Tables are copied with their rows, views re-created from their SQL.
    Raises ``CatalogKept`` (the caller then keeps the old file untouched) when the old file is
    locked by a read-write session (its objects cannot be read, and that session may be creating
    some right now) or holds objects that are not copied (macros, sequences, types, or a name
    that clashes with a membench view). Put your own tables in ``user.duckdb`` instead: membench
    never touches it, and ``ResultStore.connect`` attaches it as ``user_db``.
    """
    if not old_catalog.exists():
        return []
    try:
        con.execute(f"ATTACH '{old_catalog.as_posix()}' AS {_OLD} (READ_ONLY)")
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            raise CatalogKept(
                f"{old_catalog} is open read-write in another process (DuckDB lock); it was not rebuilt so "
                "that objects created in that session are not lost. Its views show the results as of its "
                "last rebuild; close that session (or open it with -readonly) to let it refresh."
            ) from exc
        raise CatalogKept(f"{old_catalog} cannot be read ({exc}); it was left as it is") from exc
    try:
        return _copy_user_objects(con, old_catalog)
    finally:
        con.execute(f"DETACH {_OLD}")


def _copy_user_objects(con: duckdb.DuckDBPyConnection, old_catalog: Path) -> list[str]:
    row = con.execute("SELECT current_database()").fetchone()
    if row is None:
        raise RuntimeError("DuckDB returned no row for SELECT current_database()")
    new_db = row[0]
    ours = _objects(con, new_db)
    our_names = {n for kind in ("view", "macro") for _, n, _ in ours[kind]}
    old = _objects(con, _OLD)
    tables = old["table"]
    views = [(s, n, d) for s, n, d in old["view"] if n not in our_names]
    # membench's statistics macros are never the user's, whether or not this build defined them
    macros = [n for _, n, _ in old["macro"] if n not in our_names and n not in MACROS]
    blocked = [f"macro {n}" for n in macros] + [f"{k} {n}" for k in ("sequence", "type") for _, n, _ in old[k]]
    blocked += [f"table {n} (a membench view has this name)" for _, n, _ in tables if n in our_names]
    if blocked:
        raise CatalogKept(
            f"{old_catalog} holds objects membench cannot carry over ({', '.join(blocked)}); it was not "
            f"rebuilt. Move them to {USER_DATABASE} (next to it, never touched by membench), then refresh."
        )
    kept: list[str] = []
    for schema, name, _ in tables:
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        con.execute(f'CREATE TABLE "{schema}"."{name}" AS SELECT * FROM {_OLD}."{schema}"."{name}"')
        kept.append(f"{schema}.{name}")
    pending = list(views)
    while pending:  # a user view may read another user view: retry until no progress
        failed: list[tuple[str, str, str | None]] = []
        for schema, name, sql in pending:
            try:
                con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                con.execute(f"SET schema = '{schema}'")
                con.execute(sql or "")
                kept.append(f"{schema}.{name}")
            except duckdb.Error:
                failed.append((schema, name, sql))
            finally:
                con.execute("SET schema = 'main'")
        if len(failed) == len(pending):
            names = ", ".join(n for _, n, _ in failed)
            raise CatalogKept(f"{old_catalog}: user view(s) {names} cannot be re-created; it was not rebuilt")
        pending = failed
    return kept
