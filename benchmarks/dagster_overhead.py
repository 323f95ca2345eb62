"""Dagster overhead: ``full_benchmark`` vs the same stage functions in a loop.

What it measures, on a copy of the bundled sample config (configs/sample.yaml, 70 questions, four
memory systems, offline reader, default judges) with its own results folder and Dagster home:

1. Preparation (untimed, once): ``dagster job execute -j full_benchmark`` fills a results folder;
   then its per-question stage outputs are deleted and only the canonical tables and the embedding
   cache are kept, so both timed sides start from the same state (and embed nothing new except
   what the stages embed themselves, which both sides do).
2. Plain loop (timed): in a fresh Python process, for the same questions, the canonical and
   embeddings steps' work (conversion check, MC10 cross-check, pandera checks, embedding plan: all
   find everything current), then the four per-question stages in order through the runners the
   assets call (assets/question_assets.py ``STAGE_DEFS``: each a
   pipeline.run.stage.QuestionStage with the stage's compute function), a catalog refresh after each
   (as the assets do), then the retrieval report table and report files (pipeline.report), with a
   minimal stand-in for the Dagster context (only ``log`` is used).
3. Dagster (timed): ``dagster job execute -j full_benchmark`` on a second copy of the prepared
   folder with its own fresh Dagster home (process start, definitions load, canonical and
   embeddings steps that find everything done, the same stages, asset checks, partition status,
   event log, the reports).

It prints both wall times, the ratio (target <= 1.3x), whether both sides wrote identical
judgments, and Dagster's step times split into compute and recording (events, checks).
``--config`` takes another base config (e.g. the configs/shared.yaml slice written by
benchmarks/speed_shared.py). The kept embedding cache holds every vector the stages need, so
neither side runs the model: this measures orchestration, not embedding.

    .venv/bin/python benchmarks/dagster_overhead.py [--config FILE] [--workdir DIR]

Measured on the shared 2-core box, 2026-11-23. Before batching (load 2-5; the plain side then
skipped the canonical/embeddings work): sample 1.75x, shared.yaml slice (locomo 150, lme_oracle 60,
lme_s 20 = 230 questions) plain 34.7 s vs Dagster 67.8 s, 1.96x: 10.6 s of run setup (one
ASSET_MATERIALIZATION_PLANNED event per asset and partition, each stored by Dagster's SQLite event
log with a new engine and two transactions) and 2.4-3.2 s of materialization events per stage.
After resources/event_log.py (batched event writes; load ~1):
- slice: plain 32.2 s, Dagster 40.4 s, **1.26x**, 2570/2570 identical judgments; run setup 1.0 s,
  0.5-0.9 s of recording per stage (events + asset checks), 1,954 events.
- sample (70 questions): plain 13.5 s, Dagster 18.4 s, 1.36x: the ~5 s of Dagster process start
  and definitions load weigh more on a small run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from run_env import dagster_env

if TYPE_CHECKING:
    from pipeline.config.model import BenchmarkConfig
    from pipeline.store.results import ResultStore

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SAMPLE = ROOT / "configs" / "sample.yaml"
KEEP = ("canonical", "embeddings")  # everything else under parquet/ is recomputed by both sides


def write_config(folder: Path, name: str, base: Path = SAMPLE) -> Path:
    """``base`` (default the sample config) with absolute data paths and ``folder/results``."""
    cfg = yaml.safe_load(base.read_text())
    cfg["name"] = name
    cfg["results_dir"] = str(folder / "results")
    cfg["datasets"] = [dict(ds, path=str((ROOT / ds["path"]).resolve())) for ds in cfg["datasets"]]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def full_benchmark(env: dict[str, str], log: Path) -> tuple[float, int]:
    """(wall seconds, exit code) of one ``dagster job execute -j full_benchmark``."""
    exe = str(Path(sys.executable).parent / "dagster")
    start = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.run(
            [exe, "job", "execute", "-j", "full_benchmark"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    return time.monotonic() - start, proc.returncode


def reset_results(results: Path) -> None:
    """Keep the canonical tables and the embedding cache; drop every stage output and report."""
    for child in results.iterdir():
        if child.name == "parquet":
            for sub in child.iterdir():
                if sub.name not in KEEP:
                    shutil.rmtree(sub) if sub.is_dir() else sub.unlink()
        else:
            shutil.rmtree(child) if child.is_dir() else child.unlink()


def step_breakdown(home: Path) -> tuple[dict[str, tuple[float, float, float]], float, int]:
    """Per step of the latest run: (wall, compute, recording) seconds; run setup seconds; events.

    compute = STEP_START -> first STEP_OUTPUT (the stage function), recording = first STEP_OUTPUT
    -> STEP_SUCCESS/FAILURE (one ASSET_MATERIALIZATION event per partition, asset checks); run
    setup = the run's first event -> the first STEP_START (e.g. one ASSET_MATERIALIZATION_PLANNED
    event per asset and partition).
    """
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home)
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs(limit=1)
        logs = instance.all_logs(runs[0].run_id) if runs else []
    marks: dict[str, dict[str, float]] = {}
    first_start = None
    for entry in logs:
        ev = entry.dagster_event
        if ev is None or entry.step_key is None:
            continue
        kind = ev.event_type_value
        m = marks.setdefault(entry.step_key, {})
        if kind == "STEP_START":
            m["start"] = entry.timestamp
            first_start = entry.timestamp if first_start is None else min(first_start, entry.timestamp)
        elif kind == "STEP_OUTPUT":
            m.setdefault("output", entry.timestamp)
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            m["end"] = entry.timestamp
    out = {}
    for step, m in marks.items():
        if "start" in m and "end" in m:
            output = m.get("output", m["end"])
            out[step] = (m["end"] - m["start"], output - m["start"], m["end"] - output)
    setup = (first_start - logs[0].timestamp) if logs and first_start is not None else 0.0
    return out, setup, len(logs)


def same_judgments(a: Path, b: Path) -> tuple[int, int]:
    """(judgment rows with the same verdict and score in both folders, rows joined)."""
    import duckdb

    x, y = (p / "results" / "parquet" / "judgments" / "*.parquet" for p in (a, b))
    sql = f"""
        SELECT count(*) FILTER (WHERE x.correct IS NOT DISTINCT FROM y.correct
                                  AND x.score IS NOT DISTINCT FROM y.score), count(*)
        FROM read_parquet('{x}') x JOIN read_parquet('{y}') y USING (partition_key, unit)
    """
    same, n = duckdb.sql(sql).fetchall()[0]
    return int(same), int(n)


class PlainContext:
    """What the stage runners use of a Dagster context: ``log`` (info / warning / error / debug)."""

    def __init__(self) -> None:
        self.log = logging.getLogger("membench.plain_loop")


def plain_loop(config: Path) -> dict[str, float]:
    """Run in a child process (``--plain``): the four stages and the reports, timed per stage."""
    os.environ["MEMBENCH_CONFIG"] = str(config)
    start = time.monotonic()
    from assets.clients import StageClients
    from assets.question_assets import STAGE_DEFS
    from pipeline.datasets.keys import config_keys
    from pipeline.report.build import collect
    from pipeline.report.refresh import write_report_files
    from resources.benchmark import BenchmarkResource
    from resources.factory import build_resources

    bench = BenchmarkResource(config_path=str(config))
    cfg, store = bench.load(), bench.store()
    keys = [k for ds in config_keys(cfg, store.parquet_root) for k in ds.keys]  # as pipeline/definitions.py
    ctx = PlainContext()
    times: dict[str, float] = {"imports_and_keys": time.monotonic() - start}
    times |= _canonical_and_embeddings(cfg, store, ctx)
    bound = build_resources(cfg)  # the definitions' resources: the stages' encoder and LLM clients
    clients = StageClients(bound["embeddings"], bound["llm"], bound["judge_llm"])
    for sd in STAGE_DEFS:
        t = time.monotonic()
        outcome, _extra = sd.runner(ctx, bench.resolved(), store, keys, clients)  # the benchmark, resolved once
        store.refresh_catalog()
        times[sd.name] = time.monotonic() - t
        times[f"{sd.name}_failed_questions"] = float(len(outcome.failed))
    t = time.monotonic()
    _retrieval_report_table(cfg, store)
    store.refresh_catalog()
    write_report_files(store, collect(store))
    times["reports"] = time.monotonic() - t
    times["total"] = time.monotonic() - start
    return times


def _canonical_and_embeddings(cfg: BenchmarkConfig, store: ResultStore, ctx: PlainContext) -> dict[str, float]:
    """The canonical and embeddings steps' work (assets/canonical.py, assets/embeddings.py), timed.

    Both find everything current here (the prepared folder keeps them); full_benchmark still runs
    them -- conversion check, MC10 cross-check, the pandera checks, the embedding plan -- so the
    plain side does too.
    """
    import dagster as dg

    from assets.canonical import validate
    from assets.embeddings import collect_unit_texts
    from assets.layout import CANONICAL_TABLES
    from pipeline.datasets.convert import convert_datasets
    from pipeline.datasets.crosscheck import apply_mc10_crosscheck
    from resources.factory import build_resources

    t = time.monotonic()
    stats, _failed = convert_datasets(cfg.datasets, store, ctx.log.info)
    names = [s.dataset for s in stats]
    apply_mc10_crosscheck(store, [ds for ds in cfg.datasets if ds.name in names], ctx.log.info)
    store.refresh_catalog()
    for table in CANONICAL_TABLES:
        validate(store, names, table, dg.AssetKey(table))
    times = {"canonical": time.monotonic() - t}
    t = time.monotonic()
    encoder = build_resources(cfg)["embeddings"].store_encoder(store)
    texts = collect_unit_texts(store, cfg, cached=encoder.cache)
    encoder.ensure(texts.texts)
    encoder.compact()
    store.refresh_catalog()
    times["embeddings"] = time.monotonic() - t
    return times


def _retrieval_report_table(cfg: BenchmarkConfig, store: ResultStore) -> None:
    """The retrieval_report asset's table build (assets/reports.py), without its metadata."""
    from pipeline.metrics.retrieval import gold_protocol
    from pipeline.report.retrieval_table import build_dataset_table, fingerprint_path, input_fingerprint, table_path

    with store.connect() as con:
        for ds in cfg.datasets:
            protocol = gold_protocol(ds.loader)
            table = build_dataset_table(con, ds.name, protocol, cfg.retrieval_k)
            store.write(table_path(store, ds.name), table)
            fingerprint_path(store, ds.name).write_text(input_fingerprint(store, ds.name, protocol, cfg.retrieval_k))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plain", type=Path, help=argparse.SUPPRESS)  # child mode: config path
    parser.add_argument("--workdir", type=Path, default=None, help="keep the folders here (default: temp dir)")
    parser.add_argument("--config", type=Path, default=SAMPLE, help="base config (default configs/sample.yaml)")
    args = parser.parse_args()
    if args.plain:
        logging.basicConfig(level=logging.WARNING)
        print(json.dumps(plain_loop(args.plain)))
        return
    with tempfile.TemporaryDirectory(prefix="membench-overhead-") as tmp:
        root = args.workdir or Path(tmp)
        prep = root / "prepared"
        config = write_config(prep, "overhead", args.config)
        seconds, code = full_benchmark(dagster_env(prep, config, fresh=True), prep / "prepare.log")
        print(f"preparation run (untimed for the ratio): {seconds:.1f} s, exit {code}")
        reset_results(prep / "results")
        sides = {}
        for side in ("plain", "dagster"):
            folder = root / side
            shutil.copytree(prep / "results", folder / "results")
            sides[side] = write_config(folder, "overhead", args.config)
        start = time.monotonic()
        child = subprocess.run(
            [sys.executable, __file__, "--plain", str(sides["plain"])], cwd=ROOT, capture_output=True, text=True
        )
        plain_wall = time.monotonic() - start
        if child.returncode != 0:
            raise SystemExit(f"plain loop failed: {child.stderr[-3000:]}")
        plain = json.loads(child.stdout.strip().splitlines()[-1])
        env = dagster_env(root / "dagster", sides["dagster"], fresh=True)
        dagster_wall, code = full_benchmark(env, root / "dagster" / "run.log")
        steps, setup, events = step_breakdown(Path(env["DAGSTER_HOME"]))
        same, n = same_judgments(root / "plain", root / "dagster")
    print(f"config {args.config}, same questions and starting state on both sides")
    print(f"plain Python loop (process wall, imports included): {plain_wall:.1f} s")
    for k, v in plain.items():
        print(f"  {k:<32} {v:8.1f}")
    print(f"dagster job execute -j full_benchmark: {dagster_wall:.1f} s (exit {code})")
    print(f"  {'step':<24} {'wall':>7} {'compute':>8} {'recording':>10}")
    for step, (wall, compute, recording) in sorted(steps.items(), key=lambda kv: -kv[1][0]):
        print(f"  {step.split('__')[-1]:<24} {wall:7.1f} {compute:8.1f} {recording:10.1f}")
    total = sum(w for w, _, _ in steps.values())
    print(f"steps total {total:.1f} s; outside steps {dagster_wall - total:.1f} s, of which run setup before the "
          f"first step {setup:.1f} s; {events:,} events in the run's event log")  # fmt: skip
    print(f"identical judgments on both sides: {same}/{n}")
    print(f"ratio dagster / plain: {dagster_wall / plain_wall:.2f}x (target <= 1.3x)")


if __name__ == "__main__":
    main()
