"""A user's own objects in results.duckdb survive catalog rebuilds, or the rebuild refuses loudly
(issue 11 item 8)."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from pipeline.catalog.views import USER_DATABASE, comment_views
from pipeline.store.results import CATALOG_MARK, ResultStore, open_catalog


def _questions(n: int) -> pa.Table:
    return pa.table(
        {
            "dataset": ["d"] * n,
            "partition_key": [f"d__q{i}" for i in range(n)],
            "question_id": [f"q{i}" for i in range(n)],
        }
    )


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    s = ResultStore(results_dir=str(tmp_path / "results"))
    s.write(s.canonical_path("d", "questions"), _questions(2))
    s.refresh_catalog()
    return s


def _user_session(store: ResultStore, *sql: str) -> None:
    con = open_catalog(store.catalog_path, read_only=False)
    try:
        for statement in sql:
            con.execute(statement)
    finally:
        con.close()


def test_user_tables_and_views_survive_a_refresh(store: ResultStore) -> None:
    _user_session(
        store,
        "CREATE TABLE my_picks AS SELECT question_id, 'good' AS note FROM questions",
        "CREATE VIEW my_view AS SELECT count(*) AS n FROM questions",
        "CREATE VIEW my_notes AS SELECT note FROM my_picks",
        "CREATE SCHEMA scratch",
        "CREATE TABLE scratch.t AS SELECT 42 AS x",
    )
    store.write(store.canonical_path("d", "questions"), _questions(5))
    views = store.refresh_catalog()
    assert "questions" in views
    con = open_catalog(store.catalog_path)
    try:
        assert con.execute("SELECT count(*) FROM my_picks").fetchone() == (2,)  # the user's rows
        assert con.execute("SELECT n FROM my_view").fetchone() == (5,)  # re-created over new data
        assert con.execute("SELECT count(*) FROM my_notes").fetchone() == (2,)
        assert con.execute("SELECT x FROM scratch.t").fetchone() == (42,)
    finally:
        con.close()
    store.refresh_catalog()  # and again: nothing is duplicated or lost
    con = open_catalog(store.catalog_path)
    try:
        assert con.execute("SELECT count(*) FROM my_picks").fetchone() == (2,)
    finally:
        con.close()


def test_objects_that_cannot_be_copied_keep_the_old_file(store: ResultStore, caplog: pytest.LogCaptureFixture) -> None:
    _user_session(store, "CREATE MACRO twice(x) AS 2 * x")
    before = store.catalog_path.read_bytes()
    with caplog.at_level(logging.WARNING, logger="pipeline.store.results"):
        assert store.refresh_catalog() == []
    assert store.catalog_path.read_bytes() == before
    assert "macro twice" in caplog.text and USER_DATABASE in caplog.text
    assert not list(store.root.glob(".catalog-*"))  # no temp file left behind


def test_catalog_open_read_write_elsewhere_is_not_replaced(
    store: ResultStore, caplog: pytest.LogCaptureFixture
) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb,sys; c=duckdb.connect(r'{store.catalog_path}'); "
            "c.execute('CREATE TABLE mine AS SELECT 1 AS x'); print('ready', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        inode = store.catalog_path.stat().st_ino
        with caplog.at_level(logging.WARNING, logger="pipeline.store.results"):
            assert store.refresh_catalog() == []
        assert store.catalog_path.stat().st_ino == inode
        assert "open read-write in another process" in caplog.text
    finally:
        assert holder.stdin is not None
        holder.stdin.close()  # the session ends normally and commits its table
        holder.wait()
    store.refresh_catalog()  # once it is closed, the rebuild carries the table over
    con = open_catalog(store.catalog_path)
    try:
        assert con.execute("SELECT x FROM mine").fetchone() == (1,)
    finally:
        con.close()


def test_user_database_is_attached_by_connect(store: ResultStore) -> None:
    user = duckdb.connect(str(store.root / USER_DATABASE))
    user.execute("CREATE TABLE labels AS SELECT 'q1' AS question_id, 'hard' AS label")
    user.close()
    with store.connect() as con:
        rows = con.execute(
            "SELECT q.question_id, l.label FROM questions q JOIN user_db.labels l USING (question_id)"
        ).fetchall()
    assert rows == [("q1", "hard")]


def test_unchanged_catalog_is_kept_and_any_change_rebuilds_it(store: ResultStore) -> None:
    """refresh_catalog keeps results.duckdb while nothing it is built from changed."""
    views = store.refresh_catalog()
    stamp = store.catalog_path.stat().st_mtime_ns, store.catalog_path.stat().st_ino
    assert store.refresh_catalog() == views  # kept: same file, same views
    assert (store.catalog_path.stat().st_mtime_ns, store.catalog_path.stat().st_ino) == stamp
    store.write(store.canonical_path("d", "questions"), _questions(3))  # a stage replaced a file
    assert store.refresh_catalog() == views
    assert store.catalog_path.stat().st_ino != stamp[1]
    con = open_catalog(store.catalog_path)
    try:
        assert con.execute("SELECT count(*) FROM questions").fetchone() == (3,)
    finally:
        con.close()
    stamp = store.catalog_path.stat().st_mtime_ns, store.catalog_path.stat().st_ino
    store.catalog_path.unlink()  # deleted by hand: rebuilt
    assert store.refresh_catalog() == views and store.catalog_path.exists()
    _user_session(store, "CREATE TABLE mine AS SELECT 1 AS x")  # the file changed: rebuilt, table kept
    inode = store.catalog_path.stat().st_ino
    store.refresh_catalog()
    assert store.catalog_path.stat().st_ino != inode
    con = open_catalog(store.catalog_path)
    try:
        assert con.execute("SELECT x FROM mine").fetchone() == (1,)
    finally:
        con.close()


def _finished(store: ResultStore) -> None:
    """A catalog as a finished run leaves it: the report views' statistics macros are in it."""
    con = open_catalog(store.catalog_path)
    try:
        rows = con.execute("SELECT function_name FROM duckdb_functions() WHERE NOT internal").fetchall()
    finally:
        con.close()
    assert {"mb_boot_index", "bootstrap_mean_ci", "wilson_low"} <= {r[0] for r in rows}


def test_a_finished_catalog_is_rebuilt_despite_the_report_macros(
    store: ResultStore, caplog: pytest.LogCaptureFixture
) -> None:
    _finished(store)
    (store.root / CATALOG_MARK).unlink()  # forces a rebuild over the old file
    store.write(store.canonical_path("d", "questions"), _questions(3))
    with caplog.at_level(logging.WARNING, logger="pipeline.store.results"):
        assert "questions" in store.refresh_catalog()
    assert "not rebuilt" not in caplog.text
    # a store whose view creators define no macros (a subset of CATALOG_VIEWS) rebuilds it too:
    # the old file's membench macros are membench's, not a user's object to refuse over
    plain = ResultStore(results_dir=store.results_dir, views=(comment_views,))
    store.write(store.canonical_path("d", "questions"), _questions(4))
    with caplog.at_level(logging.WARNING, logger="pipeline.store.results"):
        assert "questions" in plain.refresh_catalog()
    assert "not rebuilt" not in caplog.text
    con = open_catalog(store.catalog_path)
    try:
        assert con.execute("SELECT count(*) FROM questions").fetchone() == (4,)
    finally:
        con.close()
    _user_session(store, "CREATE MACRO twice(x) AS 2 * x")  # a user's macro still keeps the old file
    store.write(store.canonical_path("d", "questions"), _questions(5))
    with caplog.at_level(logging.WARNING, logger="pipeline.store.results"):
        assert store.refresh_catalog() == []
    assert "macro twice" in caplog.text and "mb_boot_index" not in caplog.text
