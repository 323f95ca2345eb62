"""One ``dagster job execute`` of configs/shared_beam.yaml (or a part of it), with its figures.

What it measures, as benchmarks/speed_shared.py does (whose run and print helpers it uses): wall
time, seconds and sampled peak RSS of every step, ru_maxrss of the largest process, vectors
embedded, questions per dataset. ``--only`` keeps some datasets of the config, ``--add
name:loader:path`` adds one (e.g. the 1M tier for the scale figures), ``--job retrieval_benchmark``
stops before answers and judgments, ``--limit N`` cuts every dataset to its first N questions.

    .venv/bin/python benchmarks/speed_beam.py --workdir /tmp/beam_shared
    .venv/bin/python benchmarks/speed_beam.py --only none --add beam_1m:beam:../shared/datasets/beam/chats/1M \\
        --job retrieval_benchmark --workdir /tmp/beam_1m
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from run_env import dagster_env
from speed_shared import RssSampler, RunFigures, cache_rows, llm_cache_entries, print_run, step_windows

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "shared_beam.yaml"


def write_config(folder: Path, only: list[str] | None, add: list[str], limit: int | None) -> Path:
    cfg = yaml.safe_load(CONFIG.read_text())
    cfg["name"] = "speed_beam"
    cfg["results_dir"] = str(folder / "results")
    datasets = [d for d in cfg["datasets"] if only is None or d["name"] in only]
    for spec in add:
        name, loader, path = spec.split(":", 2)
        datasets.append({"name": name, "loader": loader, "path": path})
    for d in datasets:
        d["path"] = str((ROOT / d["path"]).resolve())
        if limit is not None:
            d["limit"] = limit
    cfg["datasets"] = datasets
    path = folder / "speed_beam.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def run(folder: Path, env: dict[str, str], job: str, log: Path) -> RunFigures:
    """``run_once`` of speed_shared.py for any job (its ru_maxrss is this process's children's)."""
    import resource

    emb0, llm0 = cache_rows(folder, "embeddings"), llm_cache_entries(folder)
    exe = str(Path(sys.executable).parent / "dagster")
    start = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen([exe, "job", "execute", "-j", job], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT)  # fmt: skip
        sampler = RssSampler(proc.pid)
        sampler.start()
        proc.wait()
        sampler.stop()
    wall = time.monotonic() - start
    windows = step_windows(Path(env["DAGSTER_HOME"]))
    return RunFigures(
        wall_s=wall,
        steps={k: end - begin for k, (begin, end) in windows.items()},
        embedded=cache_rows(folder, "embeddings") - emb0,
        llm_calls=llm_cache_entries(folder) - llm0,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        exit_code=proc.returncode,
        step_peak_rss_mb={k: sampler.peak_between(b, e) for k, (b, e) in windows.items()},
        tree_peak_rss_mb=sampler.peak_between(0.0, float("inf")),
    )


def questions(folder: Path) -> dict[str, int]:
    root = folder / "results" / "parquet" / "canonical"
    return {p.parent.name: pq.ParquetFile(p).metadata.num_rows for p in sorted(root.glob("*/questions.parquet"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=None, help="comma-separated dataset names of the config ('none': none)")
    parser.add_argument("--add", action="append", default=[], help="name:loader:path of an extra dataset")
    parser.add_argument("--job", default="full_benchmark", choices=["full_benchmark", "retrieval_benchmark"])
    parser.add_argument("--limit", type=int, default=None, help="first N questions of every dataset")
    parser.add_argument("--workdir", type=Path, default=None, help="keep results here (default: a temp dir)")
    args = parser.parse_args()
    only = None if args.only is None else [n for n in args.only.split(",") if n and n != "none"]
    with tempfile.TemporaryDirectory(prefix="membench-beam-") as tmp:
        folder = args.workdir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        config = write_config(folder, only, args.add, args.limit)
        figures = run(folder, dagster_env(folder, config), args.job, folder / "run.log")
        counts = questions(folder)
    print(f"{config.name} ({args.job}): questions {counts} = {sum(counts.values()):,}; cpus {os.cpu_count()}")
    print_run("run", figures)


if __name__ == "__main__":
    main()
