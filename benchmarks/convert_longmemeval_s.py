"""Benchmark: canonical conversion of LongMemEval_S vs a bare json + Parquet baseline.

Targets (issue "Foundation"): conversion wall time <= 2x the baseline, peak RSS <= 4 GB.
Baseline = ``json.load`` of the whole (gunzipped) file + building the flat turn rows (same row
count and columns as ``turns.parquet``) + ONE ``pq.write_table`` (zstd). It does no validation,
no hashing, no dedup, no quality accounting — the floor for "parse it and write it".

Each side runs in its own subprocess so its peak RSS (``ru_maxrss``) is its own.

    .venv/bin/python benchmarks/convert_longmemeval_s.py [--path FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT.parent / "shared" / "datasets" / "longmemeval_s_cleaned_498of500.json.gz"
RSS_LIMIT_GB = 4.0
RATIO_LIMIT = 2.0


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_convert(path: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    from pipeline.config.model import DatasetConfig
    from pipeline.datasets import convert_dataset
    from pipeline.store.results import ResultStore

    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(results_dir=tmp)
        ds = DatasetConfig(name="longmemeval_s", loader="longmemeval", path=str(path))
        start = time.perf_counter()
        stats = convert_dataset(ds, store, lambda _m: None)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_rss_mb": _peak_rss_mb(), "rows": dict(stats.rows), "quality": dict(stats.quality)}


def run_baseline(path: Path) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    start = time.perf_counter()
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = json.load(f)
    cols: dict[str, list] = {
        k: []
        for k in (
            "dataset",
            "session_key",
            "turn_id",
            "position",
            "speaker",
            "role",
            "text",
            "has_answer",
            "source_id",
            "caption",
        )
    }
    for rec in data:
        for sid, session in zip(rec["haystack_session_ids"], rec["haystack_sessions"], strict=True):
            for i, turn in enumerate(session):
                cols["dataset"].append("longmemeval_s")
                cols["session_key"].append(sid)
                cols["turn_id"].append(f"{sid}:{i}")
                cols["position"].append(i)
                cols["speaker"].append(turn["role"])
                cols["role"].append(turn["role"])
                cols["text"].append(turn["content"])
                cols["has_answer"].append(bool(turn.get("has_answer")))
                cols["source_id"].append(None)
                cols["caption"].append(None)
    table = pa.table(
        {k: pa.array(v, type=pa.string() if k in ("source_id", "caption") else None) for k, v in cols.items()}
    )
    with tempfile.TemporaryDirectory() as tmp:
        pq.write_table(table, Path(tmp) / "turns.parquet", compression="zstd")
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_rss_mb": _peak_rss_mb(), "rows": {"turns": table.num_rows}}


def _child(mode: str, path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--mode", mode, "--path", str(path)], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, default=DEFAULT)
    parser.add_argument("--mode", choices=("convert", "baseline"), default=None)
    args = parser.parse_args()
    if args.mode:
        result = run_convert(args.path) if args.mode == "convert" else run_baseline(args.path)
        print(json.dumps(result))
        return 0
    print(f"source: {args.path} ({args.path.stat().st_size / 1e6:.1f} MB on disk)")
    conv = _child("convert", args.path)
    base = _child("baseline", args.path)
    ratio = conv["seconds"] / base["seconds"]
    print(f"convert : wall {conv['seconds']:.2f} s, peak RSS {conv['peak_rss_mb']:.0f} MB")
    print(f"rows    : {conv['rows']}")
    print(f"quality : {conv['quality']}")
    print(f"baseline: wall {base['seconds']:.2f} s, peak RSS {base['peak_rss_mb']:.0f} MB, rows {base['rows']}")
    ok_time = ratio <= RATIO_LIMIT
    ok_rss = conv["peak_rss_mb"] <= RSS_LIMIT_GB * 1024
    print(
        f"ratio   : {ratio:.2f}x (target <= {RATIO_LIMIT}x) {'OK' if ok_time else 'MISSED'}; "
        f"peak RSS target <= {RSS_LIMIT_GB} GB {'OK' if ok_rss else 'MISSED'}"
    )
    return 0 if ok_time and ok_rss else 1


if __name__ == "__main__":
    raise SystemExit(main())
