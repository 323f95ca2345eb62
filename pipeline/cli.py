"""``membench``: a small CLI around the result store (what ran, what failed, where results are).

Why: the DuckDB command-line shell is not part of the Python package; these commands give a
newcomer the same answers (``membench sql``) plus the failed partitions ready to backfill.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import duckdb

from pipeline.config import load_config
from resources.storage import ResultStore

EXAMPLE_SQL = "SELECT dataset, stage, done, failed, missing FROM progress_summary"


def _store(config: str | None) -> ResultStore:
    return ResultStore(results_dir=str(load_config(config).resolved_results_dir()))


def _table(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    rel = con.sql(sql)
    if rel is None:
        return "(no result)"
    cols = rel.columns
    rows = rel.fetchall()
    widths = [max(len(str(c)), *(len(_fmt(r[i])) for r in rows)) for i, c in enumerate(cols)]
    line = " | ".join(str(c).ljust(w) for c, w in zip(cols, widths, strict=True))
    out = [line, "-+-".join("-" * w for w in widths)]
    out += [" | ".join(_fmt(v).ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def _fmt(v: object) -> str:
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def cmd_sql(args: argparse.Namespace) -> int:
    """A bad query is the user's typo, not a crash: DuckDB's message (it names the missing
    column and the candidates) on stderr, exit status 2, no traceback."""
    store = _store(args.config)
    with store.connect() as con:
        try:
            table = _table(con, args.query)
        except duckdb.Error as exc:
            sys.stderr.write(f"membench sql: {exc}\n")
            return 2
    sys.stdout.write(table + "\n")
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from pipeline.report.summary import summarize_for_cli

    store = _store(args.config)
    if not store.catalog_path.exists():
        sys.stderr.write(f"no results yet under {store.root}: run `dagster job execute -j full_benchmark`\n")
        return 1
    sys.stdout.write(summarize_for_cli(store.root) + "\n")
    return 0


def cmd_progress(args: argparse.Namespace) -> int:
    store = _store(args.config)
    with store.connect() as con:
        sys.stdout.write(_table(con, "SELECT * FROM progress_summary") + "\n")
    return 0


def cmd_failed(args: argparse.Namespace) -> int:
    """List failed questions and the command that re-materializes exactly them."""
    store = _store(args.config)
    where = "status = 'failed'" + (f" AND stage = '{args.stage}'" if args.stage else "")
    with store.connect() as con:
        rows = con.sql(f"SELECT stage, partition_key, errors FROM progress WHERE {where} ORDER BY 1, 2").fetchall()
    for stage, key, err in rows:
        sys.stdout.write(f"{stage}\t{key}\t{(err or '')[:200]}\n")
    keys = sorted({r[1] for r in rows})
    if not keys:
        sys.stdout.write("no failed questions\n")
        return 0
    sys.stdout.write(
        f"\n{len(keys)} failed question(s). Re-run them:\n"
        "  all of them (with anything else not done), one run:  dagster job execute -j full_benchmark\n"
        "  one question:  dagster asset materialize --select 'ingestion,retrievals,answers,judgments' "
        f"--partition {keys[0]}\n"
        "  in the UI (dagster dev): asset group per_question > Materialize > partitions: failed/missing "
        "(a single-run backfill)\n"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="membench", description=__doc__)
    parser.add_argument("--config", help="benchmark config YAML (default: $MEMBENCH_CONFIG or configs/sample.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("results", help="where the results are, a SQL query to look at them, headline table")
    sub.add_parser("progress", help="per dataset and stage: done / failed / missing questions")
    p_failed = sub.add_parser("failed", help="failed questions and the backfill command for them")
    p_failed.add_argument("--stage", help="only this stage (canonical, ingestion, retrievals, answers, judgments)")
    p_sql = sub.add_parser("sql", help="run a SQL query over the result tables")
    p_sql.add_argument("query", nargs="?", default=EXAMPLE_SQL)
    args = parser.parse_args(argv)
    handler = {"results": cmd_results, "progress": cmd_progress, "failed": cmd_failed, "sql": cmd_sql}
    return handler[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
