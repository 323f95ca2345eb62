"""An unchanged rerun of a config, and where its time goes.

A rerun that finds every question done still starts Dagster, loads the definitions, runs every
step (each finds its work done) and stores the run's events. This script runs the config once
(untimed, in its own Dagster home and results folder, so the project's are never touched), then
``--repeats`` unchanged reruns of ``dagster job execute -j full_benchmark``, and prints for each:
wall time, CPU time (user + sys of the run's process) and the load average when it started, since
on a shared machine the wall time says more about the neighbours than about the rerun. For the
last rerun it prints where the time went, from the run's own event log: launch to the run's
start (process start, imports, definitions load, planned events), each step's wall time, the end,
and the events stored by type; and, in a separate process, the CPU time of
``import pipeline.definitions`` and of loading the definitions.

    .venv/bin/python benchmarks/rerun_speed.py                       # the bundled sample (README command 1)
    .venv/bin/python benchmarks/rerun_speed.py --config configs/shared.yaml --repeats 2
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import dagster as dg
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from run_env import dagster_env  # noqa: E402 (benchmarks/run_env.py, next to this script)

HEAVY = ("pandas", "pandera", "scipy", "bm25s", "faiss", "torch", "openai", "matplotlib")
IMPORT_PROBE = f"""
import sys, time
t = time.process_time()
import pipeline.definitions as d
t_import = time.process_time() - t
t = time.process_time()
d.defs()
heavy = ",".join(m for m in {HEAVY!r} if m in sys.modules) or "none"
print(f"{{t_import:.2f}} {{time.process_time() - t:.2f}} {{heavy}}")
"""


def private_config(config: Path, folder: Path) -> Path:
    """``config`` with its results in ``folder`` and dataset paths made absolute (same file stem).

    Relative paths in a config resolve against the project root (pipeline/config/model.py).
    """
    cfg = yaml.safe_load(config.read_text())
    cfg["results_dir"] = str(folder / "results")
    for ds in cfg.get("datasets", []):
        path = Path(ds["path"])
        ds["path"] = str(path if path.is_absolute() else (ROOT / path).resolve())
    out = folder / config.name
    out.write_text(yaml.safe_dump(cfg))
    return out


def run_once(env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s user+sys, load average at start) of one ``full_benchmark`` run."""
    exe = str(Path(sys.executable).parent / "dagster")
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(
        [exe, "job", "execute", "-j", "full_benchmark"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"the run failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, load


def where_it_went(home: Path, launched: float) -> list[str]:
    """Launch -> run start, each step's wall time, the end, and event counts of the newest run."""
    os.environ["DAGSTER_HOME"] = str(home)
    with dg.DagsterInstance.get() as instance:
        run = instance.get_runs(limit=1)[0]
        records = instance.all_logs(run.run_id)
    kinds = Counter(r.dagster_event_type.value if r.dagster_event_type else "log message" for r in records)
    starts: dict[str, float] = {}
    lines = []
    run_start = next(r.timestamp for r in records if r.dagster_event_type == dg.DagsterEventType.RUN_START)
    lines.append(f"  launch -> run start (process, imports, definitions, planned events): {run_start - launched:.1f} s")
    for r in records:
        if r.dagster_event_type == dg.DagsterEventType.STEP_START and r.step_key:
            starts[r.step_key] = r.timestamp
        elif r.dagster_event_type == dg.DagsterEventType.STEP_SUCCESS and r.step_key in starts:
            lines.append(f"  step {r.step_key}: {r.timestamp - starts[r.step_key]:.1f} s")
    run_end = max(r.timestamp for r in records)
    lines.append(f"  last event at +{run_end - launched:.1f} s after launch")
    top = ", ".join(f"{k} {n}" for k, n in kinds.most_common(6))
    lines.append(f"  events stored: {sum(kinds.values())} ({top})")
    return lines


def import_cost(env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return f"  import probe failed: {out.stderr[-500:]}"
    imp, defs, heavy = out.stdout.split()
    return (
        f"  CPU: import pipeline.definitions {imp} s, load the definitions {defs} s (separate process); "
        f"heavy libraries loaded by then: {heavy}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "sample.yaml")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="membench-rerun-") as tmp:
        folder = (args.keep or Path(tmp)).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        env = dagster_env(folder, private_config(args.config.resolve(), folder))
        wall, cpu, load = run_once(env)
        print(f"config {args.config.name}: first run (untimed preparation) {wall:.1f} s wall, {cpu:.1f} s CPU")
        launched = 0.0
        for i in range(args.repeats):
            launched = time.time()
            wall, cpu, load = run_once(env)
            print(
                f"unchanged rerun {i + 1}: {wall:.1f} s wall, {cpu:.1f} s CPU (user+sys); "
                f"load average {load:.1f} on {os.cpu_count()} cores"
            )
        print("last rerun, from its event log:")
        for line in where_it_went(Path(env["DAGSTER_HOME"]), launched):
            print(line)
        print(import_cost(env))


if __name__ == "__main__":
    main()
