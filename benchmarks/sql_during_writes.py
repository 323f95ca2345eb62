"""SQL errors on every documented read path while runs rewrite results: target 0 in >= 2,000 queries each.

A results folder gets ``--files`` answers and as many judgments partition files and a catalog. A
writer process rewrites random ones for as long as the readers run, through
``ResultStore.write_partition`` (temp file + rename over the old one, exactly as every
per-question stage writes), with a row count that changes each time so old and new footers
differ, and rebuilds the catalog every ``--refresh-s`` seconds (as every stage does when it ends;
refused while a shell has the catalog open read-write, as then). Meanwhile this process runs
``--queries`` queries (a join of answers and judgments) on each read path the docs name:

- ``membench sql``: ``ResultStore.connect()``, a connection per query;
- membench's own catalog reads (the run's summary, reports): ``ResultStore.reader()``, one per query;
- the DuckDB shell, as README and docs/guide/sql.md say (``cd results/<config> && duckdb
  results.duckdb``): (1) a session per batch of ``--session`` queries, taking turns with the two
  above; (2) one session left open while ``--queries`` more are fed to it over ``--open-s``
  seconds; (3) the same with ``duckdb -readonly``, which lets the catalog be rebuilt under it, over
  longer than a superseded catalog's files are kept when nobody has them open;

then, for comparison, the same number on a plain DuckDB connection over the live files (no path
of membench's: what the shell read before the catalog got its fixed set of files). It prints the
error count of each, with the first error messages, and the writer's rebuilds.

    .venv/bin/python benchmarks/sql_during_writes.py --queries 2000
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from multiprocessing.sharedctypes import SynchronizedArray
from pathlib import Path

import duckdb
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.store.results import ResultStore  # noqa: E402

QUERY = (
    "SELECT count(*), sum(length(a.answer)), count(DISTINCT a.partition_key), sum(j.score) "
    "FROM answers a JOIN judgments j USING (partition_key, unit)"
)
DUCKDB_CLI = Path(sys.executable).parent / "duckdb"  # the duckdb-cli package's shell, installed by set-up
ERROR_LINE = re.compile(r"^[A-Za-z ]*Error: ")


def _tables(key: str, n: int) -> tuple[pa.Table, pa.Table]:
    units = [f"sys{i}/offline" for i in range(n)]
    answers = pa.table(
        {
            "partition_key": [key] * n,
            "unit": units,
            "status": ["ok"] * n,
            "answer": [f"answer {i} " * (1 + i % 7) for i in range(n)],
        }
    )
    judgments = pa.table(
        {"partition_key": [key] * n, "unit": units, "status": ["ok"] * n, "score": [float(i % 2) for i in range(n)]}
    )
    return answers, judgments


def _write(store: ResultStore, key: str, n: int) -> None:
    answers, judgments = _tables(key, n)
    store.write_partition("answers", key, answers)
    store.write_partition("judgments", key, judgments)


def _writer(
    results: str, files: int, refresh_s: float, stop: mp.synchronize.Event, rebuilds: SynchronizedArray[int]
) -> None:
    """Rewrite files until ``stop``; ``rebuilds``: [catalog rebuilds done, refused (a read-write session)]."""
    logging.getLogger("pipeline.store.results").setLevel(logging.ERROR)  # a refused rebuild is counted, not logged
    store = ResultStore(results_dir=results)
    rng = random.Random(7)
    last = time.monotonic()
    while not stop.is_set():
        _write(store, f"lme__q{rng.randrange(files)}", rng.randint(1, 40))
        if time.monotonic() - last >= refresh_s:
            rebuilds[0 if store.refresh_catalog() else 1] += 1
            last = time.monotonic()


def _first_line(exc: BaseException) -> str:
    return type(exc).__name__ + ": " + str(exc).splitlines()[0][:120]


def _per_query(n: int, open_con: Callable[[], object], errors: Counter[str]) -> None:
    for _ in range(n):
        try:
            with open_con() as con:  # type: ignore[attr-defined]
                con.execute(QUERY).fetchall()
        except duckdb.Error as exc:
            errors[_first_line(exc)] += 1


def _shell(store: ResultStore, n: int, errors: Counter[str]) -> int:
    """``n`` queries in one ``duckdb results.duckdb`` session started in the results folder: its errors."""
    proc = subprocess.run(
        [str(DUCKDB_CLI), "-csv", "-noheader", "results.duckdb"],
        input=f"{QUERY};\n" * n,
        cwd=store.root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    answered = len([line for line in proc.stdout.splitlines() if line.strip()])
    for line in proc.stderr.splitlines():
        if ERROR_LINE.match(line):
            errors[line[:120]] += 1
    return n - answered


class _OpenShell:
    """One ``duckdb results.duckdb`` session kept open while it is fed queries in batches."""

    def __init__(self, store: ResultStore, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [str(DUCKDB_CLI), *flags, "-csv", "-noheader", "results.duckdb"],
            cwd=store.root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.sent = 0

    def feed(self, n: int, batch: int, seconds: float) -> None:
        """``n`` queries in batches of ``batch``, spread over ``seconds``."""
        batches = max(1, -(-n // batch))
        for b in range(batches):
            assert self.proc.stdin is not None
            k = min(batch, n - b * batch)
            self.proc.stdin.write(f"{QUERY};\n" * k)
            self.proc.stdin.flush()
            self.sent += k
            time.sleep(seconds / batches)

    def close(self, errors: Counter[str]) -> int:
        out, err = self.proc.communicate(timeout=600)
        for line in err.splitlines():
            if ERROR_LINE.match(line):
                errors[line[:120]] += 1
        return self.sent - len([line for line in out.splitlines() if line.strip()])


def _plain(store: ResultStore, n: int, errors: Counter[str]) -> None:
    con = duckdb.connect(":memory:")
    for name in ("answers", "judgments"):
        glob = (store.parquet_root / name / "*.parquet").as_posix()
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{glob}', union_by_name = true)")
    for _ in range(n):
        try:
            con.execute(QUERY).fetchall()
        except duckdb.Error as exc:
            errors[_first_line(exc)] += 1
    con.close()


def _report(name: str, failed: int, n: int, errors: Counter[str]) -> None:
    print(f"{name}: {failed} errors in {n} queries")
    for message, k in errors.most_common(3):
        print(f"  {k} x {message}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=2000, help="queries per read path (and per open shell)")
    parser.add_argument("--files", type=int, default=300, help="answers files (and as many judgments files)")
    parser.add_argument("--session", type=int, default=100, help="queries per DuckDB shell session or batch")
    parser.add_argument("--refresh-s", type=float, default=2.0, help="seconds between the writer's catalog rebuilds")
    parser.add_argument("--open-s", type=float, default=75.0, help="seconds each open shell session is fed queries")
    parser.add_argument("--plain", type=int, default=None, help="plain-glob queries (default: --queries)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(results_dir=str(Path(tmp) / "res"))
        for i in range(args.files):
            _write(store, f"lme__q{i}", 5)
        store.refresh_catalog()
        stop = mp.Event()
        rebuilds: SynchronizedArray[int] = mp.Array("i", 2)
        writer = mp.Process(target=_writer, args=(store.results_dir, args.files, args.refresh_s, stop, rebuilds))
        writer.start()
        counts: dict[str, tuple[int, int, Counter[str]]] = {}
        started = time.monotonic()
        try:
            sql: Counter[str] = Counter()
            catalog: Counter[str] = Counter()
            shell: Counter[str] = Counter()
            shell_failed = 0
            batches = max(1, -(-args.queries // args.session))
            for b in range(batches):  # the paths take turns, so each meets every state of the writer
                n = min(args.session, args.queries - b * args.session)
                _per_query(n, store.connect, sql)
                _per_query(n, store.reader, catalog)
                shell_failed += _shell(store, n, shell)
                print(f"  ... {b * args.session + n} queries per path, {time.monotonic() - started:.0f} s", flush=True)
            counts["ResultStore.connect (membench sql)"] = (sum(sql.values()), args.queries, sql)
            counts["ResultStore.reader (membench's catalog reads)"] = (sum(catalog.values()), args.queries, catalog)
            counts["DuckDB shell, a session per batch"] = (shell_failed, args.queries, shell)
            for label, flags in (("read-write", ()), ("-readonly", ("-readonly",))):
                session, errors = _OpenShell(store, *flags), Counter[str]()
                session.feed(args.queries, args.session, args.open_s)
                counts[f"DuckDB shell, one {label} session open {args.open_s:g} s"] = (
                    session.close(errors),
                    session.sent,
                    errors,
                )
                print(f"  ... open {label} session done, {time.monotonic() - started:.0f} s", flush=True)
            seconds = time.monotonic() - started
            plain: Counter[str] = Counter()
            n_plain = args.queries if args.plain is None else args.plain
            _plain(store, n_plain, plain)
        finally:
            stop.set()
            writer.join()
        print(
            f"while a writer replaced answers and judgments files ({args.files} + {args.files}) and rebuilt the "
            f"catalog every {args.refresh_s:g} s ({rebuilds[0]} rebuilds, {rebuilds[1]} refused while a session had "
            f"it open read-write); {seconds:.0f} s:"
        )
        for name, (failed, n, errors) in counts.items():
            _report(name, failed, n, errors)
        total = sum(f for f, _, _ in counts.values())
        print(f"every documented read path: {total} errors in {sum(n for _, n, _ in counts.values())} queries")
        _report("plain DuckDB over the live files (for comparison)", sum(plain.values()), n_plain, plain)


if __name__ == "__main__":
    main()
