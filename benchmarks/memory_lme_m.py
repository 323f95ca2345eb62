"""Benchmark: peak memory of the canonical + embeddings-planning path at LongMemEval_M scale.

Target: the whole path (conversion, pandera checks, partition keys, catalog
refresh, embeddings planning) <= 1 GB RSS on an M-like file: 300 questions x ~495 sessions
(~1.5 GB of JSON), built from LongMemEval_S because the real M file (2.7 GB) is not shipped.

The M-like file: question i (i < 300) of S keeps its own haystack (so its evidence stays valid)
and is padded with sessions drawn (seeded) from the other questions' haystacks until it has 495,
in date order, like M's haystacks. A padding session gets a time of day unique to its question,
so it is a distinct session (1.5 M turn rows, as in the issue's measurement) whose turn texts
recur across questions, as M's pooled chat sessions do.

Each phase runs in its own subprocess and its peak RSS is that process's ``VmHWM`` (high-water
mark of its own address space, read from /proc at its end; ``ru_maxrss`` is not used because it
survives ``exec`` and so counts the forking parent's pages); ``canonical_asset_path`` then runs
every phase in ONE process, as a Dagster in-process executor would. Heavy (minutes, ~2 GB of
disk): run it by hand, not in the suite.

    .venv/bin/python benchmarks/memory_lme_m.py [--source S.json.gz] [--work DIR] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_SOURCE = ROOT.parent / "shared" / "datasets" / "longmemeval_s_cleaned_498of500.json.gz"
N_QUESTIONS = 300
SESSIONS_PER_QUESTION = 495
SEED = 11
TARGET_GB = 1.0
DATASET = "lme_m_like"
PHASES = ("convert", "validate", "partition_keys", "catalog", "embeddings_plan", "canonical_asset_path")


# ---- build the M-like file -------------------------------------------------------------------
def _retimed(date: str, question: int) -> str:
    """The same day at a time unique to ``question`` ("2023/05/20 (Sat) 02:21" -> "... 01:07").

    Why: a session's key hashes its date and turns, so a padding session drawn by two questions
    would otherwise be stored once; M has ~1.5 M distinct turn rows at this size, and the memory
    of the canonical path depends on that row count. Turn texts stay S's (as M reuses a pool of
    chat sessions), so the embeddings planning sees M's ratio of repeated texts.
    """
    if len(date) >= 5 and date[-3] == ":":
        return f"{date[:-5]}{(question // 60) % 24:02d}:{question % 60:02d}"
    return date


def build(source: Path, out: Path) -> dict[str, Any]:
    """Write the M-like file (streamed from S; sessions kept as JSON text, not objects)."""
    from pipeline.datasets.sources import iter_json_array

    questions: list[dict[str, Any]] = []
    pool: list[tuple[str, str, str]] = []  # (session id, date, turns as JSON text)
    for _, rec in iter_json_array(source):
        sessions = [
            (sid, date, json.dumps(turns, ensure_ascii=False))
            for sid, date, turns in zip(
                rec["haystack_session_ids"], rec["haystack_dates"], rec["haystack_sessions"], strict=True
            )
        ]
        pool.extend(sessions)
        if len(questions) < N_QUESTIONS:
            meta = {k: v for k, v in rec.items() if not k.startswith("haystack_")}
            questions.append({"meta": meta, "sessions": sessions})
    rng = random.Random(SEED)
    n_sessions = 0
    with out.open("w", encoding="utf-8") as f:
        f.write("[")
        for i, q in enumerate(questions):
            own = q["sessions"]
            own_ids = {sid for sid, _, _ in own}
            fill: list[tuple[str, str, str]] = []
            used: set[str] = set(own_ids)
            while len(own) + len(fill) < SESSIONS_PER_QUESTION:
                sid, date, turns = pool[rng.randrange(len(pool))]
                if sid not in used:
                    used.add(sid)
                    fill.append((sid, _retimed(date, i), turns))
            haystack = sorted(own + fill, key=lambda s: s[1])  # "2023/05/20 (Sat) 02:21" sorts by date
            n_sessions += len(haystack)
            meta = json.dumps(q["meta"], ensure_ascii=False)[1:-1]
            ids = json.dumps([s[0] for s in haystack])
            dates = json.dumps([s[1] for s in haystack])
            f.write(("," if i else "") + "{" + meta)
            f.write(f', "haystack_session_ids": {ids}, "haystack_dates": {dates}, "haystack_sessions": [')
            f.write(",".join(s[2] for s in haystack))
            f.write("]}")
        f.write("]")
    return {"questions": len(questions), "sessions": n_sessions, "bytes": out.stat().st_size}


# ---- phases (each in a child process) --------------------------------------------------------
def _store(work: Path) -> Any:
    from pipeline.store.results import ResultStore

    return ResultStore(results_dir=str(work / "results"))


def _dataset(path: Path) -> Any:
    from pipeline.config.model import DatasetConfig

    return DatasetConfig(name=DATASET, loader="longmemeval", path=str(path))


def phase_convert(work: Path, path: Path) -> dict[str, Any]:
    from pipeline.datasets.convert import MANIFEST, convert_datasets

    (_store(work).parquet_root / "canonical" / DATASET / MANIFEST).unlink(missing_ok=True)  # a real conversion
    stats, failed = convert_datasets([_dataset(path)], _store(work), lambda _m: None)
    if failed:
        raise RuntimeError(failed[0].message)
    return {"questions": stats[0].n_questions, "rows": dict(stats[0].rows), "skipped": stats[0].skipped}


def phase_validate(work: Path, path: Path) -> dict[str, Any]:
    from pipeline.core.schemas import CANONICAL_PANDERA, validate_table_file

    store, out = _store(work), {}
    for table in CANONICAL_PANDERA:
        result = validate_table_file(store.canonical_path(DATASET, table), table)
        out[table] = f"{result.rows} rows, {'passed' if result.passed else 'FAILED'}"
    return out


def phase_partition_keys(work: Path, path: Path) -> dict[str, Any]:
    from pipeline.datasets.convert import _stored_keys

    keys = _stored_keys(_store(work).parquet_root / "canonical" / DATASET)
    return {"partition_keys": len(keys)}


def phase_catalog(work: Path, path: Path) -> dict[str, Any]:
    return {"views": len(_store(work).refresh_catalog())}


def phase_embeddings_plan(work: Path, path: Path) -> dict[str, Any]:
    """Every unique unit text not cached yet (an empty cache: the first, heaviest run)."""
    from types import SimpleNamespace

    from assets.embeddings import collect_unit_texts
    from pipeline.embeddings.cache import EmbeddingCache

    cache = EmbeddingCache(work / "empty-embedding-cache", "benchmark-model")
    texts = collect_unit_texts(_store(work), SimpleNamespace(datasets=[_dataset(path)]), cached=cache)
    return {
        "unit_texts": texts.units,
        "unique": texts.unique,
        "to_embed": len(texts.texts),
        "to_embed_mb": round(sum(len(t) for t in texts.texts) / 1e6, 1),
    }


def phase_canonical_asset_path(work: Path, path: Path) -> dict[str, Any]:
    """Every phase in one process (``phase_convert`` converts afresh)."""
    out: dict[str, Any] = {}
    for name in PHASES[:-1]:
        out[name] = globals()[f"phase_{name}"](work, path)
    return out


def _peak_rss_gb() -> float:
    """This process's peak resident set (``VmHWM``), in GiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / (1 << 20)  # kB -> GiB
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def _child(phase: str, work: Path, path: Path, source: Path) -> None:
    start = time.monotonic()
    result = build(source, path) if phase == "build" else globals()[f"phase_{phase}"](work, path)
    seconds = round(time.monotonic() - start, 1)
    print(json.dumps({"result": result, "seconds": seconds, "peak_rss_gb": _peak_rss_gb()}, default=str))


def _run_phase(phase: str, work: Path, path: Path, source: Path) -> tuple[dict[str, Any], float]:
    """(child's JSON output, child's peak RSS in GiB)."""
    cmd = [
        sys.executable,
        __file__,
        "--child",
        phase,
        "--work",
        str(work),
        "--path",
        str(path),
        "--source",
        str(source),
    ]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"phase {phase} failed (exit {proc.returncode})")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out, float(out["peak_rss_gb"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--work", type=Path, default=Path("/tmp/membench_lme_m"))
    parser.add_argument("--path", type=Path, help="(internal) the M-like file")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the M-like file even if it exists")
    parser.add_argument("--child", choices=("build", *PHASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    work: Path = args.work
    path = args.path or work / "longmemeval_m_like.json"
    if args.child:
        _child(args.child, work, path, args.source)
        return 0
    if not args.source.exists() and not path.exists():
        print(f"LongMemEval_S not found at {args.source}; pass --source", file=sys.stderr)
        return 2
    work.mkdir(parents=True, exist_ok=True)
    if args.rebuild or not path.exists():
        out, rss = _run_phase("build", work, path, args.source)
        info = out["result"]
        print(
            f"built {path}: {info['questions']} questions, {info['sessions']:,} sessions, "
            f"{info['bytes'] / 1e9:.2f} GB in {out['seconds']:.0f} s (builder peak {rss:.2f} GB, not in the target)"
        )
    else:
        print(f"reusing {path} ({path.stat().st_size / 1e9:.2f} GB)")
    worst = 0.0
    print(f"{'phase':<22} {'peak RSS':>9} {'seconds':>8}  result")
    for phase in PHASES:
        result, rss = _run_phase(phase, work, path, args.source)
        worst = max(worst, rss)
        print(f"{phase:<22} {rss:>7.2f} GB {result['seconds']:>8}  {json.dumps(result['result'])[:300]}")
    verdict = "MET" if worst <= TARGET_GB else "NOT MET"
    print(f"target: every phase and the whole path <= {TARGET_GB:.1f} GB peak RSS: {verdict} (worst {worst:.2f} GB)")
    return 0 if worst <= TARGET_GB else 1


if __name__ == "__main__":
    raise SystemExit(main())
