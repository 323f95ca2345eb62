"""LongMemEval's flat retrievers inside membench, beside the official code's own retrieval table.

Runs the ``flat_bm25`` memory system on every LongMemEval_S record at both granularities (through
the pipeline's loader and the system's own ingest/retrieve, pipeline/memory/flat_offline.py),
scores each question with the report's retrieval metrics (pipeline/metrics/retrieval.py: level
``turn`` and the official ``session`` level), averages them over the questions the official
averages keep (not ``_abs``, with a gold user turn), and prints them beside the values that
LongMemEval's ``run_retrieval.py`` printed for the same records (stored figures:
tests/data/official/longmemeval_s_flat_bm25.json). ``diff`` is membench minus official.

    .venv/bin/python benchmarks/official_retrievers.py            # all 498 records, ~1 min
    .venv/bin/python benchmarks/official_retrievers.py --limit 50 # a quick look (official column: all)

Measured here (2-core machine shared with other jobs): see docs/protocols.md, "Official retrievers".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.memory.base import MemoryDeps  # noqa: E402
from pipeline.memory.flat_bm25 import FlatBm25Memory  # noqa: E402
from pipeline.memory.flat_offline import LEVELS, build, level_metrics, lme_items  # noqa: E402
from pipeline.metrics.retrieval import K_VALUES  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared/datasets/longmemeval_s_cleaned_498of500.json.gz"
FIGURES = ROOT / "tests/data/official/longmemeval_s_flat_bm25.json"
RUNS = {"turn": ("turn", "session"), "session": ("session",)}  # granularity -> levels the official run reports
METRICS = ("recall_any", "recall_all", "ndcg_any")


def measure(path: Path, limit: int | None) -> tuple[dict[str, dict[str, dict[str, list[float]]]], int]:
    """granularity -> level -> metric label -> per-question values (scored questions only)."""
    values: dict[str, dict[str, dict[str, list[float]]]] = {g: {lv: {} for lv in lvs} for g, lvs in RUNS.items()}
    n = 0
    for item in lme_items(path):
        if limit is not None and n >= limit:
            break
        n += 1
        for granularity, levels in RUNS.items():
            memory = build(FlatBm25Memory, {"granularity": granularity}, item, MemoryDeps(encoder=None))
            result = memory.retrieve(item.question)
            for level in levels:
                scores = level_metrics(result, item, LEVELS[level])
                for label, value in (scores or {}).items():
                    values[granularity][level].setdefault(label, []).append(value)
    return values, n


def print_table(values: dict[str, dict[str, dict[str, list[float]]]], official: dict) -> int:
    """Rows of (granularity, level, metric@k): membench, official, diff; returns the count of |diff| > 1e-12."""
    differing = 0
    print(f"{'run':<8} {'level':<8} {'metric':<14} {'n':>4} {'membench':>9} {'official':>9} {'diff':>9}")
    for granularity, levels in RUNS.items():
        for level in levels:
            for k in K_VALUES:
                for metric in METRICS:
                    label = f"{metric}@{k}"
                    ours = values[granularity][level].get(label, [])
                    mean = float(np.mean(ours)) if ours else float("nan")
                    theirs = official[granularity]["metrics"][level][label]
                    diff = mean - theirs
                    differing += abs(diff) > 1e-12
                    row = f"{granularity:<8} {level:<8} {label:<14} {len(ours):>4}"
                    print(f"{row} {mean:>9.4f} {theirs:>9.4f} {diff:>+9.4f}")
    return differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None, help="first N records only (the official column stays all)")
    args = parser.parse_args()
    figures = json.loads(FIGURES.read_text(encoding="utf-8"))
    start = time.perf_counter()
    values, n = measure(args.data, args.limit)
    seconds = time.perf_counter() - start
    official = figures["tables"]
    print(f"flat_bm25 on {args.data.name}: {n} records, {seconds:.1f} s (load + 2 granularities)")
    print(f"official averages over {official['turn']['n_questions']} questions "
          f"({figures['header']['official_repository']} @ {figures['header']['official_commit'][:7]})")  # fmt: skip
    differing = print_table(values, official)
    print(f"values differing from the official table: {differing}")


if __name__ == "__main__":
    main()
