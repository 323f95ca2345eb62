"""Streaming: converting a large LongMemEval-shaped file must not hold the file in memory.

Why a subprocess: peak RSS (``ru_maxrss``) is per process; measuring inside the pytest process
would include whatever earlier tests allocated. The child reports its RSS after imports and its
peak after converting, so the difference is what the conversion itself needed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

N_QUESTIONS = 300
SESSIONS_PER_QUESTION = 50
TURNS_PER_SESSION = 5
TURN_CHARS = 4000
MAX_GROWTH_MB = 200  # measured ~150 MB; json.load of the same file alone grows RSS by ~600 MB

CHILD = """
import json, resource, sys
from pipeline.config.model import DatasetConfig
from pipeline.datasets import convert_dataset
from pipeline.store.results import ResultStore
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
before = rss()
ds = DatasetConfig(name="big", loader="longmemeval", path=sys.argv[1])
stats = convert_dataset(ds, ResultStore(results_dir=sys.argv[2]), lambda _m: None)
print(json.dumps({"before_mb": before, "peak_mb": rss(), "rows": dict(stats.rows)}))
"""


def write_big_longmemeval(path: Path) -> int:
    """~300 MB of valid LongMemEval JSON, written from string templates in a couple of seconds."""
    text = ("I keep notes about my garden, my bike rides and my reading list. " * 70)[:TURN_CHARS]
    turn = json.dumps({"role": "user", "content": text, "has_answer": False})
    session = "[" + ",".join([turn] * TURNS_PER_SESSION) + "]"
    with path.open("w") as f:
        f.write("[")
        for q in range(N_QUESTIONS):
            # distinct dates -> distinct session keys, so every turn row is really written
            dates = [
                f"2023/{1 + q % 12:02d}/{1 + q // 12:02d} (Mon) {s // 60:02d}:{s % 60:02d}"
                for s in range(SESSIONS_PER_QUESTION)
            ]
            ids = [f"s{q}_{s}" for s in range(SESSIONS_PER_QUESTION)]
            head = json.dumps(
                {
                    "question_id": f"q{q}",
                    "question_type": "multi-session",
                    "question": "What do I grow?",
                    "answer": "tomatoes",
                    "question_date": "2024/01/01 (Mon) 10:00",
                    "haystack_dates": dates,
                    "haystack_session_ids": ids,
                    "answer_session_ids": ids[:1],
                }
            )
            f.write(("," if q else "") + head[:-1] + ', "haystack_sessions": [')
            f.write(",".join([session] * SESSIONS_PER_QUESTION) + "]}")
        f.write("]")
    return path.stat().st_size


@pytest.mark.slow
def test_large_file_converts_with_bounded_memory(tmp_path: Path, project_root: Path) -> None:
    src = tmp_path / "big.json"
    size_mb = write_big_longmemeval(src) / 2**20
    assert size_mb > 250
    try:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(src), str(tmp_path / "results")],
            cwd=project_root,
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        src.unlink()  # pytest keeps recent tmp dirs: do not leave 300 MB behind
        shutil.rmtree(tmp_path / "results", ignore_errors=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    n_turns = N_QUESTIONS * SESSIONS_PER_QUESTION * TURNS_PER_SESSION
    assert report["rows"]["questions"] == N_QUESTIONS
    assert report["rows"]["turns"] == n_turns
    assert report["rows"]["sessions"] == N_QUESTIONS * SESSIONS_PER_QUESTION
    growth = report["peak_mb"] - report["before_mb"]
    assert growth < MAX_GROWTH_MB, f"conversion of a {size_mb:.0f} MB file grew RSS by {growth:.0f} MB"
