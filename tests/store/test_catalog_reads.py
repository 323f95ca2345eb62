"""The catalog ``results.duckdb`` reads its Parquet files as they were when it was built.

The DuckDB shell over the catalog (``cd results/<config> && duckdb results.duckdb``, README and
docs/guide/sql.md) read the live files, which runs replace by rename: DuckDB lists a view's files
when it binds a query and opens them later, so a file renamed over in between was read at the old
file's offsets (11 of 1,000 shell queries failed while runs wrote). The catalog's views now read
hard links made when it was built (pipeline/store/catalog_files.py). Deterministic where it can
be: files are replaced or retired between the catalog's build and the query; a superseded
catalog's files are kept while a real ``duckdb`` shell holds that catalog open, whatever the time
(the time since it was superseded is set, not waited for).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.store.catalog_files import CATALOG_FILES_DIR, RETIRE_AFTER_S, RETIRED_MARK
from pipeline.store.results import ResultStore, open_catalog

DUCKDB_CLI = Path(sys.executable).parent / "duckdb"
COUNT = "SELECT count(*) FROM answers"


def _rows(key: str, n: int) -> pa.Table:
    return pa.table(
        {"partition_key": [key] * n, "unit": [f"s{i}/offline" for i in range(n)], "status": ["ok"] * n,
         "answer": [f"answer {i} " * (1 + i % 5) for i in range(n)]}
    )  # fmt: skip


def _store(tmp_path: Path, files: int = 3) -> ResultStore:
    store = ResultStore(results_dir=str(tmp_path / "res"))
    for i in range(files):
        store.write_partition("answers", f"lme__q{i}", _rows(f"lme__q{i}", 2))
    assert store.refresh_catalog()
    return store


def _shell(store: ResultStore, sql: str) -> subprocess.CompletedProcess[str]:
    """``sql`` in the DuckDB shell started in the results folder, as the docs say."""
    return subprocess.run(
        [str(DUCKDB_CLI), "-csv", "-noheader", "results.duckdb", "-c", sql],
        cwd=store.root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_files_replaced_or_retired_after_the_build_are_read_as_they_were(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.write_partition("answers", "lme__q0", _rows("lme__q0", 40))  # a run rewrites a question
    store.partition_path("answers", "lme__q1").unlink()  # and retires another
    shell = _shell(store, COUNT)
    assert shell.returncode == 0 and shell.stdout.split() == ["6"], shell.stderr
    with open_catalog(store.catalog_path) as con:
        assert con.execute(COUNT).fetchone() == (6,)
    with store.reader() as con:  # not current any more: membench's reader takes the files as they are now
        assert con.execute(COUNT).fetchone() == (42,)
    assert store.refresh_catalog()
    assert _shell(store, COUNT).stdout.split() == ["42"]  # the next build shows the new state


def test_a_writer_replacing_files_never_tears_a_catalog_query(tmp_path: Path) -> None:
    store = _store(tmp_path, files=60)
    stop = threading.Event()

    def rewrite() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            store.write_partition("answers", f"lme__q{n % 60}", _rows(f"lme__q{n % 60}", 1 + n % 37))

    query = "SELECT count(*), sum(length(answer)), count(DISTINCT partition_key) FROM answers"
    with open_catalog(store.catalog_path) as con:
        built = con.execute(query).fetchone()
    assert built == (120, 60 * 27, 60)
    writer = threading.Thread(target=rewrite, daemon=True)
    writer.start()
    errors: list[str] = []
    answers: set[object] = set()
    try:
        with open_catalog(store.catalog_path) as con:
            for _ in range(150):
                try:
                    answers.add(con.execute(query).fetchone())
                except duckdb.Error as exc:
                    errors.append(str(exc).splitlines()[0])
    finally:
        stop.set()
        writer.join(timeout=60)
    assert errors == [] and answers == {built}


def _folders(store: ResultStore) -> set[str]:
    return {p.name for p in (store.root / CATALOG_FILES_DIR).iterdir()}


def _superseded_long_ago(store: ResultStore) -> None:
    """Every marked folder as if superseded RETIRE_AFTER_S + 1 seconds ago (state, not a wait)."""
    for mark in (store.root / CATALOG_FILES_DIR).glob(f"*/{RETIRED_MARK}"):
        mark.write_text(str(float(mark.read_text()) - RETIRE_AFTER_S - 1))


def _rebuild_after_a_write(store: ResultStore, n: int) -> str:
    store.write_partition("answers", "lme__q0", _rows("lme__q0", n))
    assert store.refresh_catalog()
    return _current(store)


def _current(store: ResultStore) -> str:
    return str(json.loads((store.root / ".catalog_inputs").read_text())["files"])


def test_a_superseded_catalogs_files_stay_while_a_shell_has_it_open(tmp_path: Path) -> None:
    store = _store(tmp_path)
    first = _current(store)
    shell = subprocess.Popen(  # a user's session, opened read-only so the catalog is rebuilt under it
        [str(DUCKDB_CLI), "-readonly", "-csv", "-noheader", "results.duckdb"],
        cwd=store.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert shell.stdin is not None and shell.stdout is not None
        shell.stdin.write(f"{COUNT};\n")
        shell.stdin.flush()
        assert shell.stdout.readline().strip() == "6"  # the session has the catalog open now
        second = _rebuild_after_a_write(store, 10)
        assert _folders(store) == {first, second}  # the first one is only marked superseded
        _superseded_long_ago(store)
        third = _rebuild_after_a_write(store, 20)
        assert _folders(store) == {first, second, third}  # first: its catalog is open; second: just marked
        shell.stdin.write(f"{COUNT};\n")
        shell.stdin.flush()
        assert shell.stdout.readline().strip() == "6"  # still the state it opened, and no error
    finally:
        _, err = shell.communicate(timeout=60)
    assert err == ""
    _superseded_long_ago(store)
    fourth = _rebuild_after_a_write(store, 30)
    assert _folders(store) == {third, fourth}  # closed, superseded long ago: removed
    assert _shell(store, COUNT).stdout.split() == ["34"]
