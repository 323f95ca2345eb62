"""``flat_bm25`` through Dagster beside LongMemEval's own flat-bm25 code, same data, same machine, one run.

Used by ``benchmarks/official_retrievers.py --speed``. Each repetition runs, back to back:

- the official side: benchmarks/lme_official_bm25.py in a child process (a checkout of
  xiaowu0162/LongMemEval and an interpreter with ``rank_bm25`` 0.2.2): the file's JSON load, then
  ``batch_get_retrieved_context_and_eval`` at both granularities over every record (corpus
  building, BM25Okapi, argsort, the official metrics) in one process; imports not counted;
- membench: ``dagster job execute -j retrieval_benchmark`` of a config holding the dataset and two
  ``flat_bm25`` systems (granularity turn and session), from an empty results folder and a new
  Dagster home, so the whole run is timed: process start, definitions (the dataset's conversion),
  embeddings (nothing to embed), ingestion, retrieval, the retrieval report, Dagster's events.

Both sides' rankings are checked against the stored official figures (sha256 of every whole
ranking, tests/data/official/longmemeval_s_flat_bm25.json): membench's from the stored
``retrievals`` rows, each ranked unit's position in its memory's corpus (the ingestion checkpoint).
Figures are medians over the repetitions; ``flat_bm25 vs official`` is membench's median wall time
over the official side's (load + both granularities). CPU time (user + sys of the child) is shown
beside: on a shared machine it is the steadier figure.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lme_official_bm25 import ranking_hash  # noqa: E402
from run_env import dagster_env  # noqa: E402

from pipeline.memory.checkpoint import checkpoint_path, load  # noqa: E402
from pipeline.store.results import ResultStore  # noqa: E402

SYSTEMS = {"flat_bm25_turn": "turn", "flat_bm25_session": "session"}
OFFICIAL_SCRIPT = ROOT / "benchmarks" / "lme_official_bm25.py"


@dataclass(frozen=True)
class Side:
    """One side's timing of one repetition, and how many of its rankings differ from the figures."""

    wall_s: float
    cpu_s: float
    differing: int
    parts: dict[str, float]  # what the wall time is made of (official: load, turn, session; membench: steps)


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def official(repo: Path, python: str, data: Path, expected: dict[str, dict]) -> Side:
    """The official side, in a child process; its own timings of the load and of each granularity."""
    out = subprocess.run(
        [python, str(OFFICIAL_SCRIPT), "--repo", str(repo), "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    got = json.loads(out.stdout)
    differing = sum(
        got["hashes"][qid][g] != row[g]["full"] for qid, row in expected.items() for g in ("turn", "session")
    )
    parts = {"load": got["load_s"], **got["rank_s"]}
    cpu = got["cpu_s"]["load"] + got["cpu_s"]["rank"]
    return Side(sum(parts.values()), cpu, differing, parts)


def write_config(folder: Path, data: Path) -> Path:
    """The config membench runs: the dataset (user turns indexed) and flat_bm25 at both granularities."""
    cfg = {
        "name": "flat_bm25_speed",
        "results_dir": str(folder / "results"),
        "datasets": [{"name": "lme_s", "loader": "longmemeval", "path": str(data), "index_roles": ["user"]}],
        "memory_systems": [
            {"name": name, "kind": "flat_bm25", "params": {"granularity": granularity}}
            for name, granularity in SYSTEMS.items()
        ],
    }
    path = folder / "flat_bm25_speed.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def membench(folder: Path, data: Path, expected: dict[str, dict]) -> Side:
    """``dagster job execute -j retrieval_benchmark`` from an empty results folder and Dagster home."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = dagster_env(folder, write_config(folder, data), fresh=True)
    exe = str(Path(sys.executable).parent / "dagster")
    cpu0, start = child_cpu(), time.perf_counter()
    with (folder / "run.log").open("w") as log:
        command = [exe, "job", "execute", "-j", "retrieval_benchmark"]
        code = subprocess.run(command, cwd=ROOT, env=env, stdout=log, stderr=log, timeout=1800).returncode
    wall, cpu = time.perf_counter() - start, child_cpu() - cpu0
    if code != 0:
        raise SystemExit(f"membench run failed (exit {code}); see {folder / 'run.log'}")
    return Side(wall, cpu, differing_rankings(folder / "results", expected), step_seconds(Path(env["DAGSTER_HOME"])))


def differing_rankings(results: Path, expected: dict[str, dict]) -> int:
    """Stored rankings whose corpus positions hash otherwise than the official figures (or are missing)."""
    store = ResultStore(str(results))
    table = pq.read_table(results / "parquet" / "retrievals", columns=["question_id", "unit", "haystack_id", "units"])
    seen = 0
    differing = 0
    for row in table.to_pylist():
        granularity = SYSTEMS[row["unit"]]
        ck = load(checkpoint_path(store, row["unit"], "lme_s", row["haystack_id"]))
        if ck is None:
            differing += 1
            continue
        position = {u.unit_id: i for i, u in enumerate(ck.units)}
        positions = [position[u["unit_id"]] for u in row["units"]]
        differing += ranking_hash(positions) != expected[row["question_id"]][granularity]["full"]
        seen += 1
    return differing + (2 * len(expected) - seen)  # a ranking not stored counts as differing


def step_seconds(home: Path) -> dict[str, float]:
    """Wall seconds of each step of the latest run (Dagster's event log), plus before and after the steps."""
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home)
    with dg.DagsterInstance.get() as instance:
        run = instance.get_runs(limit=1)[0]
        starts: dict[str, float] = {}
        steps: dict[str, float] = {}
        for entry in instance.all_logs(run.run_id):
            event = entry.dagster_event
            if event is None or entry.step_key is None:
                continue
            name = entry.step_key.split("__")[-1]
            if event.event_type_value == "STEP_START":
                starts[name] = entry.timestamp
            elif event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE") and name in starts:
                steps[name] = entry.timestamp - starts[name]
    return steps


def run(repo: Path, python: str, data: Path, figures: Path, workdir: Path, repeats: int) -> None:
    """``repeats`` alternating repetitions of both sides; prints each, then the medians and the ratio."""
    expected = {row["id"]: row for row in json.loads(figures.read_text(encoding="utf-8"))["questions"]}
    print(f"flat_bm25 at granularity turn and session, {len(expected)} records of {data.name}, {repeats} repetitions")
    sides: dict[str, list[Side]] = {"official": [], "membench": []}
    for i in range(repeats):
        load_avg = os.getloadavg()[0]
        sides["official"].append(official(repo, python, data, expected))
        sides["membench"].append(membench(workdir / "membench", data, expected))
        for name, runs in sides.items():
            s = runs[-1]
            parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(s.parts.items(), key=lambda kv: -kv[1]))
            print(f"  #{i + 1} {name:<9} {s.wall_s:6.1f} s wall {s.cpu_s:6.1f} s CPU  rankings differing {s.differing}"
                  f"  ({parts}; load average {load_avg:.1f})")  # fmt: skip
    med = {n: (statistics.median(s.wall_s for s in r), statistics.median(s.cpu_s for s in r)) for n, r in sides.items()}
    print(f"official (LongMemEval run_retrieval.py, one process, load + 2 granularities): "
          f"median {med['official'][0]:.1f} s wall, {med['official'][1]:.1f} s CPU")  # fmt: skip
    print(f"membench (dagster job execute -j retrieval_benchmark, empty results folder): "
          f"median {med['membench'][0]:.1f} s wall, {med['membench'][1]:.1f} s CPU")  # fmt: skip
    differing = max(s.differing for r in sides.values() for s in r)
    print(f"rankings differing from the official figures, worst repetition: {differing} of {2 * len(expected)}")
    print(f"CPU ratio: {med['membench'][1] / med['official'][1]:.2f}x")
    print(f"flat_bm25 vs official: {med['membench'][0] / med['official'][0]:.2f}x")
