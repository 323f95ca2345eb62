"""Times LongMemEval's own flat-bm25 retrieval on a LongMemEval file, from a checkout of its repository.

Run by ``benchmarks/official_retrievers.py --speed`` in a child process (an interpreter with
``rank_bm25`` 0.2.2 beside the pipeline's packages), never imported by membench: no official code
is in this repository, only the calls. What it times, after the imports (torch, transformers and
sentence-transformers come with ``run_retrieval.py`` and are not counted):

- ``load``: the file read as the official ``main`` reads it (``json.load``; a ``.gz`` is gunzipped
  on the fly);
- ``rank``: per granularity (``turn``, ``session``), the official
  ``batch_get_retrieved_context_and_eval`` over every record in one process (corpus building,
  ``BM25Okapi``, ``argsort``, the official metrics), then ``main``'s averaging. ``main`` itself
  spreads the records over 10 spawned processes; on a 2-core machine one process is the algorithm's
  own cost (10 workers importing torch each would only add to the official side).

It prints one JSON object: the seconds, and per question and granularity the sha256[:16] of the
whole ranking (the stored figures' ``full`` hash), so the caller checks the rankings too.

    python benchmarks/lme_official_bm25.py --repo /tmp/LongMemEval \
        --data ../shared/datasets/longmemeval_s_cleaned_498of500.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np


def ranking_hash(positions: list[int]) -> str:
    """sha256[:16] of the ranked corpus positions, as the figures files store them."""
    return hashlib.sha256(json.dumps(positions, separators=(",", ":")).encode()).hexdigest()[:16]


def load(path: Path) -> list[dict[str, Any]]:
    """The records as the official ``main`` reads them (``json.load``), gunzipped when needed."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        return json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a checkout of xiaowu0162/LongMemEval")
    parser.add_argument("--data", type=Path, required=True)
    args = parser.parse_args()
    np.asfarray = lambda a: np.asarray(a, dtype=float)  # type: ignore[attr-defined]  # removed in numpy 2
    sys.path.insert(0, str(args.repo))
    from src.retrieval import run_retrieval  # type: ignore[import-not-found]

    mp.current_process().name = "Worker-1"  # the function derives a device number from the pool worker's name
    start, cpu_start = time.perf_counter(), time.process_time()
    data = load(args.data)
    loaded, cpu_loaded = time.perf_counter(), time.process_time()
    hashes: dict[str, dict[str, str]] = {}
    seconds: dict[str, float] = {}
    captured: list[list[int]] = []
    flat = run_retrieval.DenseRetrievalMaster.run_flat_retrieval

    def recording(self: Any, query: str, retriever: str, corpus: list[str]) -> Any:
        ranking = flat(self, query, retriever, corpus)
        captured.append(ranking)  # the array itself; turned into a list after the timing
        return ranking

    run_retrieval.DenseRetrievalMaster.run_flat_retrieval = recording
    cpu_rank = 0.0
    for granularity in ("turn", "session"):
        captured.clear()
        c0 = time.process_time()
        options = SimpleNamespace(retriever="flat-bm25", granularity=granularity, index_expansion_method="none")
        t0 = time.perf_counter()
        results = run_retrieval.batch_get_retrieved_context_and_eval(data, options)
        for level in ("session", "turn"):  # main()'s averaging (abstention and no-target questions skipped)
            for k in results[0]["retrieval_results"]["metrics"][level]:
                kept = [
                    r["retrieval_results"]["metrics"][level][k]
                    for r in results
                    if "_abs" not in r["question_id"]
                    and any(t.get("has_answer") for s in r["haystack_sessions"] for t in s if t["role"] == "user")
                ]
                np.mean(kept)
        seconds[granularity] = time.perf_counter() - t0
        cpu_rank += time.process_time() - c0
        for record, ranking in zip(data, captured, strict=True):
            hashes.setdefault(record["question_id"], {})[granularity] = ranking_hash([int(i) for i in ranking])
    cpu = {"load": cpu_loaded - cpu_start, "rank": cpu_rank}
    out = {"load_s": loaded - start, "rank_s": seconds, "cpu_s": cpu, "records": len(data), "hashes": hashes}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
