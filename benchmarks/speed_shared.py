"""First run vs immediate rerun of ``full_benchmark`` on a slice of configs/shared.yaml.

What it measures: ``configs/shared.yaml`` with every dataset cut to its first ``--locomo`` /
``--oracle`` / ``--lme-s`` questions (``limit:``), same memory systems and reader, its own results
folder and Dagster home (a temp dir, or ``--workdir``). It runs ``dagster job execute -j
full_benchmark`` twice in a row and prints, from the run's Dagster event log and the results folder:

- wall time of each run and rerun / first (issue target: <= 5 %);
- wall time of each step (canonical, embeddings, ingestion, retrievals, answers, ...) and the
  answers step's share of the first run (target: <= 10 %);
- vectors embedded in each run (rows added to the embedding cache: what reached the model) and
  LLM calls (entries added to the LLM cache; the shared config has no LLM, so 0 by construction);
- peak RSS: ``ru_maxrss`` of the largest process of the run (every step runs in the run's process,
  in-process executor; a bulk embedding job runs in one child process, pipeline/embeddings/encoder.py
  ISOLATE_TEXTS), the largest RSS of the whole process tree (run process + child) sampled every
  0.25 s, and per step the largest sampled tree RSS between its start and end events (so a
  memory-hungry step can be told from one that inherits a high water mark);
- retrieval latency p50/p95 per memory system on LongMemEval_S.

    .venv/bin/python benchmarks/speed_shared.py --locomo 100000 --oracle 100000 --lme-s 100000 --workdir /tmp/full

(the whole configs/shared.yaml: ~12 min first run + rerun on the 2-core dev box). Smaller
``--locomo/--oracle/--lme-s`` give a slice; ratios on a slice are not the full run's (fixed costs,
process start and model load, weigh more).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from run_env import dagster_env

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "configs" / "shared.yaml"


@dataclass(frozen=True)
class RunFigures:
    """One ``dagster job execute`` run: wall time, per-step seconds, cache growth, peak RSS."""

    wall_s: float
    steps: dict[str, float]
    embedded: int
    llm_calls: int
    peak_rss_mb: float
    exit_code: int
    step_peak_rss_mb: dict[str, float]
    tree_peak_rss_mb: float = 0.0  # sampled: the run's process plus its children


class RssSampler(threading.Thread):
    """Samples the RSS of a process tree every ``every_s`` seconds: (epoch time, MB) pairs.

    Why: the pipeline runs every step in one process (in-process executor), so ``ru_maxrss``
    says how high memory went but not in which step; the samples are matched to the steps'
    start/end events. A spike shorter than ``every_s`` can be missed (``ru_maxrss`` cannot).
    """

    def __init__(self, pid: int, every_s: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.pid, self.every_s = pid, every_s
        self.samples: list[tuple[float, float]] = []
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(self.every_s):
            self.samples.append((time.time(), tree_rss_mb(self.pid)))

    def stop(self) -> None:
        self._done.set()
        self.join()

    def peak_between(self, start: float, end: float) -> float:
        return max((mb for t, mb in self.samples if start <= t <= end), default=0.0)


def tree_rss_mb(pid: int) -> float:
    """VmRSS of ``pid`` and its descendants, MB (0 for processes that are gone)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += next(int(x.split()[1]) for x in status.splitlines() if x.startswith("VmRSS:")) / 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total


def write_slice_config(folder: Path, limits: dict[str, int], name: str) -> Path:
    """configs/shared.yaml with ``limit:`` per dataset, absolute data paths, its own results dir."""
    cfg = yaml.safe_load(SHARED.read_text())
    cfg["name"] = name
    cfg["results_dir"] = str(folder / "results")
    datasets = []
    for ds in cfg["datasets"]:
        n = limits.get(ds["name"])
        if n == 0:
            continue
        ds = dict(ds, path=str((ROOT / ds["path"]).resolve()))
        if n is not None:
            ds["limit"] = n
        datasets.append(ds)
    cfg["datasets"] = datasets
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def cache_rows(folder: Path, sub: str) -> int:
    """Rows in every Parquet file under ``results/parquet/<sub>`` (0 when absent)."""
    root = folder / "results" / "parquet" / sub
    return sum(pq.ParquetFile(p).metadata.num_rows for p in root.rglob("*.parquet")) if root.exists() else 0


def llm_cache_entries(folder: Path) -> int:
    """Files in the LLM cache folder(s) of the results dir (each is one cached reply or a shard)."""
    results = folder / "results"
    return sum(1 for p in results.rglob("*") if p.is_file() and "llm_cache" in p.parts)


def step_windows(home: Path) -> dict[str, tuple[float, float]]:
    """(start, end) epoch seconds per step of the latest run: STEP_START to STEP_SUCCESS/FAILURE."""
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home)
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs(limit=1)
        if not runs:
            return {}
        starts: dict[str, float] = {}
        out: dict[str, tuple[float, float]] = {}
        for entry in instance.all_logs(runs[0].run_id):
            ev = entry.dagster_event
            if ev is None or entry.step_key is None:
                continue
            if ev.event_type_value == "STEP_START":
                starts[entry.step_key] = entry.timestamp
            elif ev.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE") and entry.step_key in starts:
                out[entry.step_key] = (starts[entry.step_key], entry.timestamp)
        return out


def run_once(folder: Path, env: dict[str, str], log: Path) -> RunFigures:
    """One ``dagster job execute -j full_benchmark`` (output to ``log``), with its figures."""
    emb0, llm0 = cache_rows(folder, "embeddings"), llm_cache_entries(folder)
    exe = str(Path(sys.executable).parent / "dagster")
    start = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [exe, "job", "execute", "-j", "full_benchmark"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        sampler = RssSampler(proc.pid)
        sampler.start()
        proc.wait()
        sampler.stop()
    wall = time.monotonic() - start
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    windows = step_windows(Path(env["DAGSTER_HOME"]))
    return RunFigures(
        wall_s=wall,
        steps={k: end - begin for k, (begin, end) in windows.items()},
        embedded=cache_rows(folder, "embeddings") - emb0,
        llm_calls=llm_cache_entries(folder) - llm0,
        peak_rss_mb=rss_mb,
        exit_code=proc.returncode,
        step_peak_rss_mb={k: sampler.peak_between(b, e) for k, (b, e) in windows.items()},
        tree_peak_rss_mb=sampler.peak_between(0.0, float("inf")),
    )


def retrieval_latency(folder: Path, dataset: str) -> list[tuple[str, int, float, float]]:
    """(system, questions, p50 ms, p95 ms) of per-question retrieval latency on ``dataset``.

    Same definition as the retrieval_report view (quantile_cont over the stored
    ``retrieval_latency_s`` of ok retrievals), read straight from the Parquet files.
    """
    import duckdb

    pattern = folder / "results" / "parquet" / "retrievals" / f"{dataset}__*.parquet"
    if not list(pattern.parent.glob(pattern.name)):
        return []
    sql = f"""
        SELECT unit, count(*), 1000 * quantile_cont(retrieval_latency_s, 0.5),
               1000 * quantile_cont(retrieval_latency_s, 0.95)
        FROM read_parquet('{pattern}') WHERE status = 'ok' GROUP BY unit ORDER BY unit
    """
    return [(str(u), int(n), float(p50), float(p95)) for u, n, p50, p95 in duckdb.sql(sql).fetchall()]


def short(step: str) -> str:
    """``speed_slice__answers`` / ``speed_slice_answers`` -> ``answers`` (the asset's own name)."""
    return step.split("__")[-1]


def print_run(label: str, r: RunFigures, first_wall: float | None = None) -> None:
    ratio = f" ({100 * r.wall_s / first_wall:.1f}% of the first run)" if first_wall else ""
    rss = (
        f"peak RSS {r.peak_rss_mb:.0f} MB (ru_maxrss: largest process so far), "
        f"process tree {r.tree_peak_rss_mb:.0f} MB (sampled)"
    )
    print(f"{label}: {r.wall_s:.1f} s{ratio}, exit {r.exit_code}, {rss}")
    print(f"  vectors embedded: {r.embedded:,}; LLM calls: {r.llm_calls}")
    for step, secs in sorted(r.steps.items(), key=lambda kv: -kv[1]):
        share = f" ({100 * secs / r.wall_s:.1f}% of the run)" if r.wall_s else ""
        rss = r.step_peak_rss_mb.get(step, 0.0)
        print(f"  {short(step):<28} {secs:8.1f} s{share}  sampled peak RSS {rss:6.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=int, default=150, help="LoCoMo questions (0 = leave the dataset out)")
    parser.add_argument("--oracle", type=int, default=60, help="LongMemEval oracle questions")
    parser.add_argument("--lme-s", type=int, default=20, help="LongMemEval_S questions")
    parser.add_argument("--workdir", type=Path, default=None, help="keep results here (default: a temp dir)")
    args = parser.parse_args()
    limits = {"locomo": args.locomo, "lme_oracle": args.oracle, "lme_s": args.lme_s}
    with tempfile.TemporaryDirectory(prefix="membench-speed-") as tmp:
        folder = args.workdir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        config = write_slice_config(folder, limits, "speed_slice")
        env = dagster_env(folder, config)
        first = run_once(folder, env, folder / "first.log")
        latency = retrieval_latency(folder, "lme_s")
        rerun = run_once(folder, env, folder / "rerun.log")
    print(f"slice of configs/shared.yaml: {limits} (limit: per dataset), memory systems and reader as in the file")
    print_run("first run", first)
    print_run("rerun", rerun, first.wall_s)
    answers = sum(s for k, s in first.steps.items() if short(k) == "answers")
    print(f"answers step / first run: {100 * answers / first.wall_s:.1f}% (target <= 10%)")
    print(f"rerun / first run: {100 * rerun.wall_s / first.wall_s:.1f}% (target <= 5%)")
    print(f"rerun: {rerun.embedded} vectors embedded, {rerun.llm_calls} LLM calls (target 0 and 0)")
    print("retrieval latency per question on lme_s (first run):")
    for system, n, p50, p95 in latency:
        print(f"  {system:<16} {n:4d} questions  p50 {p50:7.1f} ms  p95 {p95:7.1f} ms")


if __name__ == "__main__":
    main()
