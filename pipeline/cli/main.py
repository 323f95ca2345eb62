"""``membench``: a small CLI around the result store (what ran, what failed, where results are).

Why: the DuckDB shell needs the results folder as its working directory (the views hold paths
relative to it); these commands work from anywhere and give a newcomer the same answers
(``membench sql``), the failed partitions ready to re-run, and a paired comparison of two runs.

Every mistake a user can make here (a missing config, no results yet, a bad query, an unknown
stage) ends in ONE line on stderr and exit status 2, never a traceback; values a user types are
passed to DuckDB as parameters, never pasted into SQL.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import duckdb

from pipeline.cli.checks import add_check_parsers, cmd_check_isolation, cmd_judge_probe
from pipeline.cli.errors import UserError
from pipeline.cli.project_cmds import add_project_parsers, cmd_init, cmd_install_hindsight, load_project_env
from pipeline.config.model import BenchmarkConfig, ConfigError, load_config
from pipeline.config.printed_commands import config_selection, materialize_one, run_all
from pipeline.store.results import STAGE_TABLES, ResultStore

if TYPE_CHECKING:
    from pipeline.cli.forget import ForgetPlan

HELP = """membench: the results of a benchmark config, from any folder: where they are, progress per
stage, the failed questions with the commands that re-run them, SQL over the result views, the
catalog's columns, paired comparisons of runs, forgetting a renamed memory system's results, the
judges' error rates on answers of known verdict, and the isolation canary of a memory system.
`membench init DIR` writes a benchmark project of your own to run in (membench installed with pip).

Run the benchmark itself with `dagster job execute -j full_benchmark` (README). A mistake here
(a missing config, no results yet, a bad query) ends in one line on stderr and exit status 2."""
EXAMPLE_SQL = "SELECT dataset, stage, done, failed, missing FROM progress_summary"
STAGES: tuple[str, ...] = ("canonical", *STAGE_TABLES)
USER_ERROR = 2


def first_run(source: str) -> str:
    return f"run `{run_all(source)}` first"


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {message} (see {self.prog} --help)\n")
        raise SystemExit(USER_ERROR)


def _store(config: str | None) -> ResultStore:
    try:
        cfg = load_config(config)
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    return ResultStore(results_dir=str(cfg.resolved_results_dir()))


def _require_results(store: ResultStore, config: str | None) -> None:
    if not any(store.parquet_root.glob("canonical/*/questions.parquet")):
        raise UserError(f"no results yet under {store.root}: {first_run(load_config(config).source)}")


def _fmt(v: object) -> str:
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def format_table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table; a query with zero rows prints its header and ``(0 rows)``."""
    cells = [[_fmt(v) for v in r] for r in rows]
    widths = [max([len(str(c)), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    out = [" | ".join(str(c).ljust(w) for c, w in zip(columns, widths, strict=True))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    if not rows:
        out.append("(0 rows)")
    return "\n".join(out)


def _query_table(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> str:
    rel = con.sql(sql, params=params)
    if rel is None:  # a statement without a result (SET, CREATE ...)
        return "(no result)"
    return format_table(rel.columns, rel.fetchall())


def cmd_sql(args: argparse.Namespace) -> int:
    """A bad query is the user's typo, not a crash: DuckDB's message (it names the missing
    column and the candidates) on stderr, exit status 2, no traceback."""
    store = _store(args.config)
    with store.connect() as con:
        try:
            table = _query_table(con, args.query)
        except duckdb.Error as exc:
            first = first_run(load_config(args.config).source)
            hint = "" if store.catalog_path.exists() else f" (no results yet under {store.root}: {first})"
            raise UserError(" ".join(str(exc).split()) + hint) from None
    sys.stdout.write(table + "\n")
    return 0


def cmd_check_config(args: argparse.Namespace) -> int:
    """Resolve a config as loading the Dagster definitions would (every kind looked up, params
    validated, LLM needs checked) without running anything: one summary line, then each LLM call
    setting a protocol fixes (so the ``llm:`` value is not sent there) and each LLM judge asking
    another model than its published protocol did; or one error line naming the file, entry and key."""
    from pipeline.kinds.fixed_settings import fixed_llm_settings, judge_model_notes
    from pipeline.kinds.resolve import check_config

    try:
        resolved = check_config(load_config(args.file))
    except ConfigError as exc:
        raise UserError(" ".join(str(exc).split())) from None
    fixed, models = fixed_llm_settings(resolved), judge_model_notes(resolved)
    lines = [resolved.summary()]
    lines += [*(["fixed by protocol (not taken from the config):"] if fixed else []), *(f"  {f}" for f in fixed)]
    lines += [*(["judge models (each asks the configured one):"] if models else []), *(f"  {m}" for m in models)]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _to_stderr(message: str) -> None:
    sys.stderr.write(message + "\n")


def cmd_estimate(args: argparse.Namespace) -> int:
    """The LLM calls, tokens and cost the config's run still needs (pipeline/report/estimate.py).
    Datasets without canonical tables in the results folder are converted into a temporary folder
    first (no LLM call; the results folder is not written)."""
    import tempfile

    from pipeline.datasets.base import DatasetFileError
    from pipeline.datasets.convert import convert_dataset
    from pipeline.kinds.resolve import check_config
    from pipeline.llm.prices import PriceTableError, load_prices
    from pipeline.report.estimate import estimate_run, prices_path, render

    try:
        resolved = check_config(load_config(args.config))
        prices = load_prices(prices_path(resolved))
    except (ConfigError, PriceTableError) as exc:
        raise UserError(" ".join(str(exc).split())) from None
    store = _store(args.config)
    with tempfile.TemporaryDirectory(prefix="membench-estimate-") as tmp:
        scratch = ResultStore(results_dir=tmp)
        for ds in resolved.config.datasets:
            if store.read_canonical(ds.name, "questions") is None:
                try:
                    convert_dataset(ds, scratch, _to_stderr, base_dir=resolved.config.base_dir)
                except DatasetFileError as exc:
                    raise UserError(str(exc)) from None
        estimates = estimate_run(resolved, store, prices, canonical=scratch)
    sys.stdout.write(render(estimates) + "\n")
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from pipeline.report.summary import summarize_for_cli

    store = _store(args.config)
    _require_results(store, args.config)
    sys.stdout.write(summarize_for_cli(store.root) + "\n")
    return 0


def cmd_progress(args: argparse.Namespace) -> int:
    store = _store(args.config)
    _require_results(store, args.config)
    with store.connect() as con:
        sys.stdout.write(_query_table(con, "SELECT * FROM progress_summary") + "\n")
    return 0


FAILED_SQL = """
SELECT stage, partition_key, errors FROM progress
WHERE status = 'failed' AND ($stage IS NULL OR stage = $stage)
ORDER BY stage, partition_key
"""


QUESTIONS_FAILED = 1  # `membench failed` with failed questions: a script (`membench failed || ...`) can tell


def cmd_failed(args: argparse.Namespace) -> int:
    """List failed questions and the command that re-materializes exactly them; a question failed by
    rows of a memory system no longer configured says so and names ``membench forget``. Exit status 1
    when questions failed (0 when none did, 2 for a mistake), as ``dagster job execute`` ends."""
    from pipeline.run.stale import StaleFinder, with_note

    store = _store(args.config)
    _require_results(store, args.config)
    cfg = load_config(args.config)
    with store.connect() as con:
        rows = con.execute(FAILED_SQL, {"stage": args.stage}).fetchall()
    stale = StaleFinder(store, cfg)
    forget: set[str] = set()
    for stage, key, err in rows:
        systems = stale.systems(stage, key)
        forget.update(systems)
        sys.stdout.write(f"{stage}\t{key}\t{with_note((err or '')[:200], systems)}\n")
    keys = sorted({r[1] for r in rows})
    if not keys:
        where = f" at stage {args.stage}" if args.stage else ""
        sys.stdout.write(f"no failed questions{where}\n")
        return 0
    rerunnable = [k for k in keys if "#" not in k and "*" not in k]  # keyless / unreadable-file rows
    prefix = cfg.config_name
    stages = ",".join(f"{prefix}/{s}" for s in ("ingestion", "retrievals", "answers", "judgments"))
    lines = [
        f"\n{len(keys)} failed question(s). Re-run them:",
        f"  all of them (with anything else not done), one run:  {run_all(cfg.source)}",
    ]
    if rerunnable:
        lines.append(f"  one question:  {materialize_one(cfg.source, stages, rerunnable[0])}")
    lines.append(
        f"  in the UI (dagster dev): asset group {prefix}_per_question > Materialize > partitions: failed "
        "(a backfill, split into runs of $MEMBENCH_BACKFILL_CHUNK questions)"
    )
    if len(rerunnable) < len(keys):
        lines.append(
            "  keys with '#' (a record without a readable id) or '*' (an unreadable file) have no partition: "
            "fix the input file, then run again"
        )
    if forget:  # no run retries them: their systems are gone from the config
        names = " ".join(sorted(forget))
        command = f"{config_selection(cfg.source)}membench forget {names}"
        lines.append(f"  rows of systems no longer configured (no run retries them; add --yes to remove):  {command}")
    sys.stdout.write("\n".join(lines) + "\n")
    return QUESTIONS_FAILED


def cmd_forget(args: argparse.Namespace) -> int:
    """Remove memory systems' stored rows, checkpoints and product state (pipeline/cli/forget.py);
    a dry run unless ``--yes``. A name with nothing stored is said so, exit status 0."""
    from pipeline.cli.forget import plan_forget

    store = _store(args.config)
    _require_results(store, args.config)
    cfg = load_config(args.config)
    if not args.yes or plan_forget(store, cfg, args.systems).empty:  # nothing written: no lock needed
        _forget(store, cfg, args.systems, yes=False)
        return 0
    # Dagster's side, reached inside this command only (the CLI's one use of it; tests/tree/test_layers.py): the lock a
    # starting run takes to claim the config, so none starts meanwhile, and the instance's live runs
    from assets.layout import CLAIM_LOCK
    from assets.run_claim import live_run_of
    from pipeline.util.filelock import file_lock

    with file_lock(store.root / CLAIM_LOCK):
        holder = live_run_of(cfg.config_name, store.root)
        if holder is not None:
            raise UserError(
                f"run {holder} of config {cfg.config_name!r} is running and writes the files forget rewrites: "
                "wait for it to finish (or cancel it), then run forget again"
            )
        _forget(store, cfg, args.systems, yes=True)
    return 0


def _forget(store: ResultStore, cfg: BenchmarkConfig, systems: list[str], yes: bool) -> None:
    """Plan (again, under the lock when ``yes``), print the plan, and remove it when ``yes``."""
    from pipeline.cli.forget import apply_plan, plan_forget

    plan = plan_forget(store, cfg, systems)
    sys.stdout.write("\n".join(forget_lines(store, plan, yes)) + "\n")
    if yes and not plan.empty:
        apply_plan(store, plan)
        rows = sum(h.rows for h in plan.stages)
        folders = len(plan.checkpoints) + len(plan.product_dirs)
        sys.stdout.write(
            f"removed {rows} row(s) and {folders} folder(s); catalog refreshed: `membench progress` and "
            "`membench failed` show it now, the report on the next run\n"
        )


def forget_lines(store: ResultStore, plan: ForgetPlan, yes: bool) -> list[str]:
    """What ``membench forget`` prints before it acts: the table per stage, the folders, the notes."""
    names = " ".join(plan.systems)
    if plan.empty:
        lines = [f"nothing stored for {names} under {store.root}: nothing to forget"]
    else:
        mode = "removing" if yes else "dry run, nothing removed; add --yes to remove"
        lines = [f"forget {names} in {store.root}: {mode}"]
        table = [(h.stage, len(h.keys), h.rows, h.failed) for h in plan.stages]
        lines.append(format_table(("stage", "questions touched", "rows", "failed rows"), table))
        lines += [f"remove folder: {_shown(store, p)} (ingestion checkpoints)" for p in plan.checkpoints]
        lines += [f"remove folder: {_shown(store, p)} (product state)" for p in plan.product_dirs]
        lines += [f"remove {n} row(s) from {_shown(store, p)} (derived from the retrievals)" for p, n in plan.derived]
    lines += [f"keep folder: {_shown(store, k.path)}: {k.reason}" for k in plan.kept]
    if plan.empty:
        return lines
    lines += [f"{n}: nothing stored under this name" for n in plan.without_rows]
    lines += [f"{n} is still configured: the next run recomputes it" for n in plan.still_configured]
    return lines


def _shown(store: ResultStore, path: Path) -> str:
    return str(path.relative_to(store.root)) if path.is_relative_to(store.root) else str(path)


def cmd_compare(args: argparse.Namespace) -> int:
    """Paired comparison of two runs on the questions both scored (see pipeline.report.compare)."""
    from pipeline.report import compare

    try:
        run_a, run_b = compare.resolve_run(args.run_a), compare.resolve_run(args.run_b)
    except compare.RunNotFound as exc:
        raise UserError(str(exc)) from None
    result = compare.compare_runs(run_a, run_b, seed=args.seed, resamples=args.resamples)
    if not result.rows:
        raise UserError(
            f"nothing to compare: no (dataset, system, reader, judge metric) is scored on the same questions in "
            f"{run_a} and {run_b}"
        )
    sys.stdout.write(compare.text_report(result) + "\n")
    if args.html is not None:
        path = compare.write_html(result, compare.html_path(result, args.html))
        sys.stdout.write(f"\nwritten: {path}\n")
        if path.resolve().parent == (run_b / compare.COMPARE_DIR).resolve() and (run_b / "report.html").exists():
            from pipeline.report.refresh import refresh_report_files  # the report links the page now, not next run

            sys.stdout.write(f"report linking it: {refresh_report_files(ResultStore(results_dir=str(run_b)))}\n")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """Systems x datasets across runs, ranked only within one metric, judge and reader (pipeline.report.leaderboard)."""
    from pipeline.report import leaderboard
    from pipeline.report.compare import RunNotFound

    try:
        board = leaderboard.build(args.results)
    except RunNotFound as exc:
        raise UserError(str(exc)) from None
    if not board.groups:
        raise UserError("no scored results in " + ", ".join(args.results) + " (materialize the reports first)")
    sys.stdout.write(leaderboard.text_report(board) + "\n")
    path = leaderboard.write_html(board, leaderboard.html_path(board, args.html))
    sys.stdout.write(f"\nwritten: {path}\n")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """Every view and column with its meaning (the text stored as DuckDB comments)."""
    from pipeline.catalog.docs import VIEW_DOCS, catalog_columns, column_doc, markdown

    store = _store(args.config)
    _require_results(store, args.config)
    with store.connect() as con:
        columns = catalog_columns(con)
    if args.view is not None and args.view not in columns:
        raise UserError(f"no view {args.view!r}; views: {', '.join(sorted(columns))}")
    views = [args.view] if args.view else sorted(columns)
    if args.markdown:
        sys.stdout.write(markdown(columns, views) + "\n")
        return 0
    for view in views:
        sys.stdout.write(f"{view}: {VIEW_DOCS.get(view, '?')}\n")
        for c in columns[view]:
            sys.stdout.write(f"  {c}: {column_doc(view, c) or '?'}\n")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Recompute the manifest's hashes and headline numbers (pipeline.provenance.verify); exit 1 on any mismatch."""
    from pipeline.provenance.manifest import ManifestError
    from pipeline.provenance.verify import MISMATCH, verify
    from pipeline.report.compare import RunNotFound, resolve_run

    try:
        config = args.results if Path(args.results).suffix in {".yaml", ".yml"} else None
        checks = verify(resolve_run(args.results), config)
    except (RunNotFound, ManifestError) as exc:
        raise UserError(str(exc)) from None
    sys.stdout.write("".join(c.line() + "\n" for c in checks))
    bad = sum(c.status == MISMATCH for c in checks)
    sys.stdout.write(
        f"verify: {bad} mismatch(es) in {len(checks)} checks\n" if bad else f"verify: all {len(checks)} checks hold\n"
    )
    return 1 if bad else 0


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="membench", description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="benchmark config YAML (default: $MEMBENCH_CONFIG or configs/sample.yaml)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("results", help="where the results are, a SQL query to look at them, headline table")
    p_check = sub.add_parser(
        "check-config", help="validate a benchmark config (kinds, params, plugins, LLM needs) without running it"
    )
    p_check.add_argument("file", metavar="FILE", help="benchmark config YAML")
    sub.add_parser("progress", help="per dataset and stage: done / failed / missing questions")
    p_failed = sub.add_parser("failed", help="failed questions and the command that re-runs them")
    p_failed.add_argument("--stage", choices=STAGES, help="only this stage")
    p_forget = sub.add_parser(
        "forget",
        help="remove a renamed or removed memory system's stored rows and checkpoints (dry run unless --yes)",
        description="Rows of a memory system the config no longer has keep their questions failed on every run; "
        "this removes them (every per-question stage, its ingestion checkpoints, product state no configured "
        "system shares). A dry run prints what it would remove; --yes removes it.",
    )
    p_forget.add_argument("systems", nargs="+", metavar="SYSTEM", help="memory system name(s) as stored")
    p_forget.add_argument("--yes", action="store_true", help="remove (default: dry run)")
    p_sql = sub.add_parser("sql", help="run a SQL query over the result views")
    p_sql.add_argument("query", nargs="?", default=EXAMPLE_SQL)
    p_schema = sub.add_parser("schema", help="every view and column of the catalog and what it means")
    p_schema.add_argument("view", nargs="?", help="only this view")
    p_schema.add_argument("--markdown", action="store_true", help="as the README's markdown table")
    p_cmp = sub.add_parser(
        "compare",
        help="paired comparison of two runs on shared questions (McNemar exact / paired bootstrap)",
        description="RUN_A and RUN_B are results folders (holding parquet/) or benchmark config YAML files.",
    )
    p_cmp.add_argument("run_a", metavar="RUN_A")
    p_cmp.add_argument("run_b", metavar="RUN_B")
    p_cmp.add_argument(
        "--html",
        nargs="?",
        const="",
        help="also write it as a static page beside the results: RUN_B/compare/<RUN_A folder name>.html, or "
        "RUN_B/compare/HTML for a relative path (an absolute one as given); RUN_B's report.html links those",
    )
    p_cmp.add_argument("--seed", type=int, default=None, help="bootstrap seed (default: the pinned one)")
    p_cmp.add_argument("--resamples", type=int, default=None, help="bootstrap resamples (default 1000)")
    p_lb = sub.add_parser("leaderboard", help="one table and one static page of systems x datasets across runs")
    p_lb.add_argument("results", nargs="+", metavar="RESULTS", help="results folders or benchmark config YAML files")
    p_lb.add_argument(
        "--html",
        default=None,
        help="page to write (default: leaderboard.html beside the first run's folder; a relative path there too)",
    )
    p_verify = sub.add_parser(
        "verify", help="recompute a run's dataset hashes and headline numbers against its manifest.json"
    )
    p_verify.add_argument("results", metavar="RESULTS", help="results folder or benchmark config YAML file")
    add_check_parsers(sub)
    p_est = sub.add_parser(
        "estimate", help="LLM calls, tokens and cost the run still needs, per dataset and component (before spending)"
    )
    p_est.add_argument("config", nargs="?", default=None, help="benchmark config (default: $MEMBENCH_CONFIG)")
    add_project_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    load_project_env()  # a project's .env, as the dagster commands run in this folder read it
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "results": cmd_results,
        "check-config": cmd_check_config,
        "progress": cmd_progress,
        "failed": cmd_failed,
        "forget": cmd_forget,
        "sql": cmd_sql,
        "compare": cmd_compare,
        "schema": cmd_schema,
        "leaderboard": cmd_leaderboard,
        "verify": cmd_verify,
        "estimate": cmd_estimate,
        "judge-probe": cmd_judge_probe,
        "check-isolation": cmd_check_isolation,
        "init": cmd_init,
        "install-hindsight": cmd_install_hindsight,
    }
    try:
        return handlers[args.command](args)
    except UserError as exc:
        sys.stderr.write(f"membench {args.command}: {exc}\n")
        return USER_ERROR
    except BrokenPipeError:  # `membench ... | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
