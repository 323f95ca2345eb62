"""``membench judge-probe`` and ``membench check-isolation``: checks of the judges and of the memories.

Why commands and not stages of every run: both ask real components questions nobody asked in the
benchmark (a judge about answers of known verdict, a memory about a fact of another haystack); they
are run when a judge or a memory system is added or changed, and their stored results are read by
every later report (``judge_probe_rates``, the ``isolation_leak`` integrity flag).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pipeline.cli.errors import UserError
from pipeline.config.model import ConfigError, load_config


def add_check_parsers(sub: Any) -> None:
    """The two sub-commands' arguments (``sub``: main's sub-parser action)."""
    p_probe = sub.add_parser(
        "judge-probe",
        help="run each configured judge on answers of known verdict built from each dataset; false-accept and "
        "false-reject rates per judge and question type (view judge_probe_rates)",
    )
    p_probe.add_argument("--dataset", action="append", help="only this dataset (repeatable; default: every dataset)")
    p_probe.add_argument("--judge", action="append", help="only this judge name (repeatable; default: every judge)")
    p_probe.add_argument("--per-type", type=int, default=None, help="questions per question type (default 5)")
    p_iso = sub.add_parser(
        "check-isolation",
        help="ingest a unique canary fact into one haystack of a memory system and check that another "
        "haystack's retrieval never returns it (flags a leak in the manifest and the report)",
    )
    p_iso.add_argument("systems", nargs="+", metavar="SYSTEM", help="memory system name(s) of the config")


def _bench(config: str | None) -> Any:
    from pipeline.kinds.resolve import check_config

    try:
        return check_config(load_config(config))
    except ConfigError as exc:
        raise UserError(" ".join(str(exc).split())) from None


def cmd_judge_probe(args: argparse.Namespace) -> int:
    """Probe every judge of every (chosen) dataset; print one line per (dataset, judge) and the rates."""
    from pipeline.judges.probe import DEFAULT_PER_TYPE
    from pipeline.judges.probe_run import run_judge_probes
    from pipeline.llm.client import ROLE_JUDGES, client_for
    from pipeline.store.results import ResultStore

    bench = _bench(args.config)
    cfg = bench.config
    names = [d.name for d in cfg.datasets]
    unknown = sorted(set(args.dataset or ()) - set(names))
    if unknown:
        raise UserError(f"no dataset {', '.join(unknown)} in {cfg.source}; datasets: {', '.join(names)}")
    per_type = DEFAULT_PER_TYPE if args.per_type is None else args.per_type
    if per_type < 1:
        raise UserError(f"--per-type must be >= 1 (got {per_type})")
    store = ResultStore(results_dir=str(cfg.resolved_results_dir()))
    llm = client_for(cfg, ROLE_JUDGES)
    runs = []
    try:
        for dataset in args.dataset or names:
            runs += run_judge_probes(store, bench, dataset, llm, per_type=per_type, judges=args.judge, log=_say)
    finally:
        if llm is not None:
            llm.close()
    if not runs:
        raise UserError("no judge ran: no judge of the config applies to the chosen datasets")
    store.refresh_catalog()
    with store.connect() as con:
        rows = con.execute(
            "SELECT dataset, judge, n_probes, n_failed, false_accept_rate, false_reject_rate FROM judge_probe_rates "
            "WHERE type_raw = '(all)' ORDER BY dataset, judge"
        ).fetchall()
    sys.stdout.write("dataset | judge | probes | failed | false accept | false reject\n")
    for d, j, n, f, fa, fr in rows:
        sys.stdout.write(f"{d} | {j} | {n} | {f} | {_rate(fa)} | {_rate(fr)}\n")
    sys.stdout.write('per question type: membench sql "SELECT * FROM judge_probe_rates"\n')
    return 0


def _say(message: str) -> None:
    """Progress on stdout as it happens (a probe of an LLM judge takes minutes)."""
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


def _rate(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def cmd_check_isolation(args: argparse.Namespace) -> int:
    """The canary check of each named memory system; exit status 1 when one leaked."""
    from pipeline.memory.isolation import STATUS_LEAKED, check_isolation_of

    bench = _bench(args.config)
    configured = {s.name for s in bench.memory_systems}
    unknown = sorted(set(args.systems) - configured)
    if unknown:
        raise UserError(f"no memory system {', '.join(unknown)} in {bench.config.source}; configured: "
                        f"{', '.join(sorted(configured)) or 'none'}")  # fmt: skip
    deps = _memory_deps(bench)
    try:
        results = [check_isolation_of(bench, name, deps) for name in args.systems]
    finally:
        if deps.llm is not None:
            deps.llm.close()
    for r in results:
        sys.stdout.write(r.line() + "\n")
    return 1 if any(r.status == STATUS_LEAKED for r in results) else 0


def _memory_deps(bench: Any) -> Any:
    """What the memory systems of a run are built with, without Dagster (assets/ingestion.py's deps)."""
    from pipeline.agentic.mcp.spec import mcp_data_dir
    from pipeline.embeddings.encoder import store_encoder
    from pipeline.llm.client import client_for
    from pipeline.memory.base import MemoryDeps
    from pipeline.store.results import ResultStore

    cfg = bench.config
    store = ResultStore(results_dir=str(cfg.resolved_results_dir()))
    return MemoryDeps(
        encoder=store_encoder(cfg.embeddings, store), llm=client_for(cfg), log=_say,
        state_dir=cfg.resolved_results_dir(), data_dir=mcp_data_dir(store),
    )  # fmt: skip
