"""Scale-out on Dagster: one run vs N concurrent runs over the same LLM-bound slice.

What it measures: a 200-question LongMemEval-format slice (the bundled oracle sample's
8 questions repeated with new ids), an LLM reader against the project's fake OpenAI-compatible
server with a fixed delay per request (``--delay``; the reader's request cap is 1 per run, so a run
is bound by the endpoint's latency like a real API slice), the ``full_context`` memory and the
offline ``lme_contains_normalized`` judge. Both modes first run ``retrieval_benchmark`` (canonical,
embeddings, ingestion, retrievals) untimed, then time the ``question_stages`` job (ingestion and
retrievals find everything done; answers and judgments do the work):

- one run: ``dagster job execute -j question_stages`` over the whole partition range;
- N runs: the range cut into N chunks, N such processes at once (range tags per run) on one
  results folder and one Dagster instance, as a backfill split by ``$MEMBENCH_BACKFILL_CHUNK``
  with ``max_concurrent_runs: N`` would run them.

It prints both wall times, the throughput (questions/s), the ratio, and whether the two results
folders hold identical answers and judgments (same predictions, same verdicts).

    .venv/bin/python benchmarks/concurrent_runs.py --questions 200 --runs 4 --delay 0.2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from run_env import dagster_env  # noqa: E402 (benchmarks/run_env.py, next to this script)

from pipeline.core.families import ABSTENTION_SUFFIX, is_abstention_id  # noqa: E402
from pipeline.datasets.sources import iter_json_array  # noqa: E402
from pipeline.llm.fake_server import FakeOpenAIServer  # noqa: E402

SAMPLE = ROOT / "pipeline" / "sample_data" / "longmemeval_oracle_sample.json"


def write_slice(path: Path, n: int) -> list[str]:
    """``n`` questions in LongMemEval format: the sample's questions repeated with new ids and texts."""
    base = [rec for _, rec in iter_json_array(SAMPLE)]
    out = []
    for i in range(n):
        q = dict(base[i % len(base)])
        suffix = ABSTENTION_SUFFIX if is_abstention_id(q["question_id"]) else ""  # keep it an abstention
        q["question_id"] = f"slice{i:04d}{suffix}"
        q["question"] = f"{q['question']} (question {i})"  # unique prompts: the LLM cache must not answer
        out.append(q)
    path.write_text(json.dumps(out))
    return [f"lme__{q['question_id']}" for q in out]


def write_config(folder: Path, data: Path, base_url: str) -> Path:
    cfg = {
        "name": "bench",
        "results_dir": str(folder / "results"),
        "datasets": [{"name": "lme", "loader": "longmemeval", "path": str(data)}],
        "memory_systems": [{"name": "full", "kind": "full_context"}],
        "readers": [{"name": "llm", "kind": "llm"}],
        "judges": [{"name": "lme_contains_normalized", "kind": "lme_contains_normalized"}],
        "llm": {"base_url": base_url, "model": "fake", "api_key_env": "NO_KEY", "max_concurrency": 1},
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def dagster(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    exe = str(Path(sys.executable).parent / "dagster")
    return subprocess.Popen([exe, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def materialize(keys: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """One run of the per-question stages over the range ``keys[0]..keys[-1]``."""
    tags = {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
    return dagster(["job", "execute", "-j", "question_stages", "--tags", json.dumps(tags)], env)


def wait_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"a run failed (exit {p.returncode}): {err.decode()[-2000:]}")


def timed_mode(folder: Path, data: Path, keys: list[str], runs: int, base_url: str) -> float:
    """Prepare (untimed), then the answers + judgments stages in ``runs`` concurrent runs."""
    env = dagster_env(folder, write_config(folder, data, base_url))
    wait_all([dagster(["job", "execute", "-j", "retrieval_benchmark"], env)])
    size = -(-len(keys) // runs)
    chunks = [keys[i : i + size] for i in range(0, len(keys), size)]
    start = time.monotonic()
    wait_all([materialize(chunk, env) for chunk in chunks])
    return time.monotonic() - start


def results(folder: Path) -> list[tuple[object, ...]]:
    parquet = folder / "results" / "parquet"
    sql = f"""
        SELECT a.partition_key, a.prediction, j.correct
        FROM read_parquet('{parquet}/answers/*.parquet') a
        JOIN read_parquet('{parquet}/judgments/*.parquet') j USING (partition_key)
        WHERE a.status = 'ok' AND j.status = 'ok' ORDER BY 1
    """
    return duckdb.sql(sql).fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the fake server takes per request")
    args = parser.parse_args()
    server = FakeOpenAIServer(default_reply="A golden retriever.", default_delay_s=args.delay).start()
    try:
        with tempfile.TemporaryDirectory(prefix="membench-scaleout-") as tmp:
            root = Path(tmp)
            data = root / "slice.json"
            keys = write_slice(data, args.questions)
            one = timed_mode(root / "one", data, keys, 1, server.base_url)
            many = timed_mode(root / "many", data, keys, args.runs, server.base_url)
            same = results(root / "one") == results(root / "many")
            n_rows = len(results(root / "one"))
    finally:
        server.stop()
    print(f"slice: {args.questions} questions, LLM delay {args.delay:.2f} s/request, answers + judgments stages")
    print(f"1 run:            {one:7.1f} s  {args.questions / one:6.2f} questions/s")
    print(f"{args.runs} concurrent runs: {many:7.1f} s  {args.questions / many:6.2f} questions/s")
    print(f"speed-up: {one / many:.2f}x; identical answers and judgments: {same} ({n_rows} rows)")


if __name__ == "__main__":
    main()
