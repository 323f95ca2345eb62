"""SQL readers never see a Parquet file replaced under them (issue 24 item 3).

A run replaces a question's file by rename while ``membench sql`` (``ResultStore.connect``) reads:
DuckDB binds a view (reading the files' footers) and scans later, so a file renamed over in between
was read half old, half new ("Out of buffer", "TProtocolException: Invalid data"). A connection now
reads hard links to the files as they were when it opened (same inodes, no copy), so a file
replaced or removed afterwards changes nothing it reads. Deterministic: the file is replaced
between the connection's opening and its query; no timing, no threads.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pipeline.store.results import ResultStore


def _rows(n: int, label: str) -> pa.Table:
    return pa.table(
        {
            "partition_key": [f"lme__q{i}" for i in range(n)],
            "unit": ["sys/offline"] * n,
            "status": ["ok"] * n,
            "answer": [f"{label} {i}" for i in range(n)],
        }
    )


def test_a_file_replaced_after_the_connection_opened_is_read_as_it_was(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path / "res"))
    store.write_partition("answers", "lme__q0", _rows(3, "old"))
    store.write_partition("answers", "lme__q1", _rows(1, "kept"))
    with store.connect() as con:
        store.write_partition("answers", "lme__q0", _rows(50, "new"))  # a run rewrites the question
        store.partition_path("answers", "lme__q1").unlink()  # and another file is retired
        got = con.execute("SELECT answer FROM answers ORDER BY answer").fetchall()
    assert [r[0] for r in got] == ["kept 0", "old 0", "old 1", "old 2"]
    with store.connect() as con:  # a new connection sees the new state
        assert con.execute("SELECT count(*) FROM answers").fetchone() == (50,)


def test_pinned_links_are_removed_and_never_viewed(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path / "res"))
    store.write_partition("answers", "lme__q0", _rows(2, "a"))
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM answers").fetchone() == (2,)
    leftovers = [p for p in store.root.rglob("*.parquet") if store.parquet_root not in p.parents]
    assert leftovers == []
    fingerprint = store.catalog_fingerprint()
    with store.connect():
        assert store.catalog_fingerprint() == fingerprint  # the links live outside parquet/
