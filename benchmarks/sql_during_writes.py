"""SQL errors while a writer replaces Parquet files: target 0 in >= 2,000 queries.

A results folder gets ``--files`` answers partition files. A writer process rewrites random ones
for as long as the readers run, through ``ResultStore.write_partition`` (temp file + rename over
the old one, exactly as every per-question stage writes), with a row count that changes each
time so old and new footers differ. Meanwhile this process runs ``--queries`` queries through
``ResultStore.connect()`` (what ``membench sql`` uses), then, for comparison, the same number on a
plain DuckDB connection over the live glob (no pinned links). It prints the error count of each,
with the first error messages.

    .venv/bin/python benchmarks/sql_during_writes.py --queries 2000
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.store.results import ResultStore  # noqa: E402

QUERY = "SELECT count(*), sum(length(answer)), count(DISTINCT partition_key) FROM answers"


def _table(key: str, n: int) -> pa.Table:
    return pa.table(
        {
            "partition_key": [key] * n,
            "unit": [f"sys{i}/offline" for i in range(n)],
            "status": ["ok"] * n,
            "answer": [f"answer {i} " * (1 + i % 7) for i in range(n)],
        }
    )


def _writer(results: str, files: int, stop: mp.synchronize.Event) -> None:  # type: ignore[name-defined]
    store = ResultStore(results_dir=results)
    rng = random.Random(7)
    while not stop.is_set():
        key = f"lme__q{rng.randrange(files)}"
        store.write_partition("answers", key, _table(key, rng.randint(1, 40)))


def _pinned_queries(store: ResultStore, n: int, errors: Counter[str]) -> None:
    for i in range(n):
        try:
            with store.connect() as con:
                con.execute(QUERY).fetchall()
        except duckdb.Error as exc:
            errors[type(exc).__name__ + ": " + str(exc).splitlines()[0][:120]] += 1
        if (i + 1) % 100 == 0:
            print(f"  ... {i + 1} pinned queries, {sum(errors.values())} errors", flush=True)


def _plain_queries(store: ResultStore, n: int, errors: Counter[str]) -> None:
    con = duckdb.connect(":memory:")
    glob = (store.parquet_root / "answers" / "*.parquet").as_posix()
    con.execute(f"CREATE VIEW answers AS SELECT * FROM read_parquet('{glob}', union_by_name = true)")
    for _ in range(n):
        try:
            con.execute(QUERY).fetchall()
        except duckdb.Error as exc:
            errors[type(exc).__name__ + ": " + str(exc).splitlines()[0][:120]] += 1
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--plain", type=int, default=None, help="plain-glob queries (default: --queries)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(results_dir=str(Path(tmp) / "res"))
        for i in range(args.files):
            store.write_partition("answers", f"lme__q{i}", _table(f"lme__q{i}", 5))
        stop = mp.Event()
        writer = mp.Process(target=_writer, args=(store.results_dir, args.files, stop))
        writer.start()
        try:
            pinned: Counter[str] = Counter()
            started = time.monotonic()
            _pinned_queries(store, args.queries, pinned)
            seconds = time.monotonic() - started
            plain: Counter[str] = Counter()
            n_plain = args.queries if args.plain is None else args.plain
            _plain_queries(store, n_plain, plain)
        finally:
            stop.set()
            writer.join()
        print(
            f"ResultStore.connect (membench sql): {sum(pinned.values())} errors in {args.queries} queries "
            f"while a writer replaced files ({args.files} files; {seconds:.0f} s)"
        )
        for message, n in pinned.most_common(3):
            print(f"  {n} x {message}")
        print(f"plain DuckDB over the live glob (for comparison): {sum(plain.values())} errors in {n_plain}")
        for message, n in plain.most_common(3):
            print(f"  {n} x {message}")


if __name__ == "__main__":
    main()
