"""Issue 41's floors: what the parts of a run that the design fixes cost alone, beside each target's budget.

Target 1 asks ``dagster job execute -j retrieval_benchmark`` (``flat_bm25``, 498 LongMemEval_S
questions, two granularities, from an empty results folder) to cost at most 1.5x LongMemEval's own
flat-bm25 script; target 2 asks at most 5 ms of CPU per LLM request in an LLM-bound run of 2,000
questions. Part of each run is not membench's code but what the design fixes: Dagster runs the
stages with a partition per question, the partition keys are known before the run (so the source is
read once for them and once by the conversion), the canonical turns are stored, each question's
result is a Parquet file per stage, and requests go through the ``openai`` SDK. This script
measures each of those parts alone, as cheaply as the libraries allow (no membench code on the
measured path), and prints their sum beside the target's budget: what is left of the budget is
all membench's own work may cost (its ranking, records, checks, reports).

Target 1, on the LongMemEval_S file of ``--data``:

- Dagster: ``dagster job execute`` of a job of retrieval_benchmark's shape, a little smaller so it
  stays a floor (canonical's five tables and embeddings as one step where the real job has two,
  ingestion and retrievals partitioned by the file's question keys and run as one range with one
  check each where the real job has two, the report), every step empty, a fresh Dagster home with
  the project's dagster.yaml; the CPU of that process (start, imports of dagster, pyarrow, duckdb
  and numpy, the run and its events);
- the keys: ISA-L gunzip and ijson's C lexer up to each record's ``question_id``;
- the records: the same, building every record whole (what any conversion reads at least);
- the turns' text stored once: every turn's text as one zstd Parquet column;
- the stage files: a one-row Parquet file written (temp file and rename) and read back for each
  question's ingestion and retrievals rows and each (question, granularity) memory checkpoint;
- nothing for the ranking itself.

Target 2, ``--questions`` questions, two LLM requests each (reader and judge):

- Dagster: the same kind of empty job of question_stages' shape (ingestion, retrievals, answers,
  judgments, one check each where the real job has two), per request;
- the ``openai`` SDK alone: ``chat.completions.create`` from ``--cap`` threads against the fake
  server in a child process (its CPU not counted), prompts of ``--chars`` characters;
- the stage files: an answers and a judgments file per question, per request.

Beside each floor, not in it: the same stage rows in files of 64 questions (``CHUNK``), a layout the
design does not have, to show what the one part of the floor a redesign could remove is worth.

    .venv/bin/python benchmarks/speed_floor.py --data ../shared/datasets/longmemeval_s_cleaned_498of500.json.gz \\
        --official-repo /tmp/LongMemEval --official-python /tmp/venv-rank-bm25/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ijson
import pyarrow as pa
import pyarrow.parquet as pq
from isal import igzip

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from flat_bm25_speed import child_cpu, official  # noqa: E402
from llm_client_cpu import SERVER, cpu_s  # noqa: E402  (SERVER: the fake server in a child process)

FIGURES = ROOT / "tests" / "data" / "official" / "longmemeval_s_flat_bm25.json"
RATIO_BUDGET = 1.5  # target 1: membench at most 1.5x the official script
REQUEST_BUDGET_MS = 5.0  # target 2: CPU per LLM request
JOB = "floor"
CHUNK = 64  # questions a file would hold if stage files were written per chunk (not the design: for comparison)
BUF = 1 << 20

# The empty job's module: ``before`` (one unpartitioned multi-asset), ``stages`` partitioned by the keys
# of keys.json and run as one range, a check on each, ``after`` (unpartitioned); every step does nothing.
DEFS = """
import json
import dagster as dg
import duckdb, numpy, pyarrow, pyarrow.parquet  # what the real steps import

keys = json.load(open({keys!r}))
parts = dg.StaticPartitionsDefinition(keys)
before, stages, after = {before!r}, {stages!r}, {after!r}
assets, checks = [], []
if before:
    @dg.multi_asset(specs=[dg.AssetSpec(n) for n in before])
    def canonical():
        for n in before:
            yield dg.MaterializeResult(asset_key=n)
    assets.append(canonical)
upstream = list(before)
for name in stages:
    def body(context):
        return dg.MaterializeResult()
    a = dg.asset(name=name, partitions_def=parts, backfill_policy=dg.BackfillPolicy.single_run(), deps=upstream)(body)
    def check():
        return dg.AssetCheckResult(passed=True)
    checks.append(dg.asset_check(asset=a, name="no_failed_units")(check))
    assets.append(a)
    upstream = [name]
for name in after:
    assets.append(dg.asset(name=name, deps=upstream)(lambda: dg.MaterializeResult()))
tags = {{"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}}
job = dg.define_asset_job({job!r}, selection=dg.AssetSelection.all(), executor_def=dg.in_process_executor, tags=tags)
defs = dg.Definitions(assets=assets, asset_checks=checks, jobs=[job])
"""
RETRIEVAL_SHAPE = (("questions", "haystacks", "turns", "sessions", "evidence", "embeddings"),
                   ("ingestion", "retrievals"), ("retrieval_report",))  # fmt: skip
QUESTION_STAGES_SHAPE = ((), ("ingestion", "retrievals", "answers", "judgments"), ())


def timed(fn: Callable[[], object]) -> float:
    """CPU seconds of this process that ``fn`` takes."""
    start = cpu_s()
    fn()
    return cpu_s() - start


def dagster_floor(keys: list[str], shape: tuple[tuple[str, ...], ...], folder: Path) -> float:
    """CPU seconds of ``dagster job execute`` of the empty job of ``shape`` over ``keys``, fresh home."""
    shutil.rmtree(folder, ignore_errors=True)
    home = folder / "home"
    home.mkdir(parents=True)
    shutil.copy(ROOT / "configs" / "dagster.yaml", home / "dagster.yaml")
    (folder / "keys.json").write_text(json.dumps(keys))
    before, stages, after = shape
    defs = DEFS.format(keys=str(folder / "keys.json"), before=before, stages=stages, after=after, job=JOB)
    (folder / "floor_defs.py").write_text(defs)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DAGSTER_CLI_JOB_EXECUTE_MODULE_NAME": "floor_defs",
        "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]),
    }
    exe = str(Path(sys.executable).parent / "dagster")
    start = child_cpu()
    with (folder / "run.log").open("w") as log:
        command = [exe, "job", "execute", "-j", JOB]
        code = subprocess.run(command, cwd=folder, env=env, stdout=log, stderr=log, check=False).returncode
    if code != 0:
        raise SystemExit(f"the empty Dagster job failed (exit {code}); see {folder / 'run.log'}")
    return child_cpu() - start


def question_ids(path: Path) -> list[str]:
    """Every record's ``question_id`` of the gzip JSON file (ISA-L gunzip, ijson's C lexer)."""
    with igzip.open(path, "rb") as stream:
        return [str(qid) for qid in ijson.items(stream, "item.question_id", buf_size=BUF)]


def parse_records(path: Path) -> int:
    """Every record of the gzip JSON file built whole, one at a time (as a conversion streams them)."""
    with igzip.open(path, "rb") as stream:
        return sum(1 for _ in ijson.items(stream, "item", use_float=True, buf_size=BUF))


def turn_texts(path: Path) -> pa.Array:
    """Every turn's text of a LongMemEval file, in file order (for the store's floor; not timed)."""
    with igzip.open(path, "rb") as stream:
        texts = [t["content"] for t in ijson.items(stream, "item.haystack_sessions.item.item", buf_size=BUF)]
    return pa.array(texts, pa.string())


def store_texts(texts: pa.Array, folder: Path) -> None:
    pq.write_table(pa.table({"text": texts}), folder / "turns.parquet", compression="zstd")


def row_table(i: int) -> pa.Table:
    """One stage row: a dozen columns of the kinds a stage file holds."""
    s = f"lme_s__{i:08x}"
    return pa.table({
        "partition_key": [s], "dataset": ["lme_s"], "question_id": [s[7:]], "unit": ["flat_bm25_turn"],
        "unit_hash": ["0" * 16], "record_hash": ["1" * 16], "status": ["ok"], "error": pa.array([None], pa.string()),
        "duration_s": [0.01], "finished_at": pa.array([0], pa.timestamp("us")), "haystack_id": [s], "text": ["x" * 200],
    })  # fmt: skip


def stage_files(n: int, folder: Path, rows: int = 1) -> float:
    """CPU seconds of ``n`` stage rows in files of ``rows`` rows, each written to a temp name, renamed,
    then read back once (``rows`` 1: a file per question and stage, as the design has it).

    The cheapest calls pyarrow offers for it: the table serialized into memory and written in one
    ``write``; read through ``ParquetFile`` on this thread without pre-buffering (``pq.read_table``
    goes through the dataset layer, about twice the cost on a file this small).
    """
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    tables = [pa.concat_tables([row_table(i) for i in range(s, min(s + rows, n))]) for s in range(0, n, rows)]
    start = cpu_s()
    for i, table in enumerate(tables):
        path = folder / f"{i}.parquet"
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="snappy")
        tmp = folder / f".{i}.{uuid.uuid4().hex}.tmp"
        with tmp.open("wb") as f:
            f.write(sink.getvalue())
        os.replace(tmp, path)
    for i in range(len(tables)):
        with pq.ParquetFile(folder / f"{i}.parquet", pre_buffer=False) as f:
            f.read(use_threads=False)
    return cpu_s() - start


def sdk_floor(requests: int, cap: int, chars: int, delay: float) -> float:
    """CPU ms per request of ``openai`` alone, ``cap`` threads, the fake server in a child process."""
    from openai import OpenAI

    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert server.stdout is not None
        client = OpenAI(base_url=server.stdout.readline().strip(), api_key="sk-test", max_retries=0)
        filler = ("I went to the market on Saturday and bought some tomatoes. " * (chars // 60 + 1))[:chars]

        def send(i: int) -> str | None:
            messages = [{"role": "user", "content": f"{filler}\nQuestion {i}: what did I buy?"}]
            reply = client.chat.completions.create(model="fake", messages=messages)  # type: ignore[arg-type]
            return reply.choices[0].message.content

        send(-1)  # the first call builds the client's machinery: not counted
        with ThreadPoolExecutor(cap) as pool:
            start = cpu_s()
            done = sum(1 for text in pool.map(send, range(requests)) if text)
            cpu = cpu_s() - start
        client.close()
        if done != requests:
            raise SystemExit(f"only {done} of {requests} requests answered")
        return 1000 * cpu / requests
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)


def median_of(repeats: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(repeats))


def target1(args: argparse.Namespace, work: Path) -> None:
    keys = [f"lme_s__{qid}" for qid in question_ids(args.data)]
    texts = turn_texts(args.data)
    files = 4 * len(keys)  # ingestion and retrievals per question, a checkpoint per (question, granularity)
    parts: dict[str, float] = {
        "Dagster: an empty job of retrieval_benchmark's shape": median_of(
            args.repeats, lambda: dagster_floor(keys, RETRIEVAL_SHAPE, work / "dagster1")
        ),
        "the keys: gunzip + lex to the question ids": median_of(
            args.repeats, lambda: timed(lambda: question_ids(args.data))
        ),
        "the records: gunzip + parse every record": median_of(
            args.repeats, lambda: timed(lambda: parse_records(args.data))
        ),
        f"the turns' text stored once ({len(texts):,} turns, zstd)": median_of(
            args.repeats, lambda: timed(lambda: store_texts(texts, work))
        ),
        f"the stage files: {files:,} one-row files written and read": median_of(
            args.repeats, lambda: stage_files(files, work / "files1")
        ),
    }
    floor = sum(parts.values())
    print(f"target 1: flat_bm25 on {len(keys)} questions of {args.data.name}, budget {RATIO_BUDGET}x the official")
    for name, cpu in parts.items():
        print(f"  {name:<62} {cpu:6.2f} s CPU")
    print(f"  {'floor (the ranking itself not counted)':<62} {floor:6.2f} s CPU")
    chunked = median_of(args.repeats, lambda: stage_files(files, work / "files1", CHUNK))
    print(f"  {f'(not in the floor: the same rows in files of {CHUNK} rows)':<62} {chunked:6.2f} s CPU")
    if args.official_repo is None:
        print("  (no --official-repo: the budget is not measured)")
        return
    expected = {row["id"]: row for row in json.loads(FIGURES.read_text(encoding="utf-8"))["questions"]}
    side = [official(args.official_repo, args.official_python, args.data, expected) for _ in range(args.repeats)]
    official_cpu = statistics.median(s.cpu_s for s in side)
    budget = RATIO_BUDGET * official_cpu
    print(f"  {'official (load + 2 granularities), median':<62} {official_cpu:6.2f} s CPU")
    print(f"  budget {budget:.2f} s CPU; the floor is {floor / budget:.0%} of it ({floor / official_cpu:.2f}x the "
          f"official); left for membench's own work: {budget - floor:.2f} s")  # fmt: skip


def target2(args: argparse.Namespace, work: Path) -> None:
    requests = 2 * args.questions
    keys = [f"lme__{i:08x}" for i in range(args.questions)]
    dagster_cpu = median_of(args.repeats, lambda: dagster_floor(keys, QUESTION_STAGES_SHAPE, work / "dagster2"))
    parts = {
        "Dagster: an empty job of question_stages' shape": 1000 * dagster_cpu / requests,
        f"openai SDK alone, {args.cap} threads, {args.chars:,}-char prompts": median_of(
            args.repeats, lambda: sdk_floor(requests, args.cap, args.chars, args.delay)
        ),
        "the stage files: an answers and a judgments file per question": 1000
        * median_of(args.repeats, lambda: stage_files(requests, work / "files2"))
        / requests,
    }
    floor = sum(parts.values())
    chunked = 1000 * median_of(args.repeats, lambda: stage_files(requests, work / "files2", CHUNK)) / requests
    print(f"target 2: {args.questions:,} questions, {requests:,} LLM requests, budget {REQUEST_BUDGET_MS} ms CPU each")
    for name, ms in parts.items():
        print(f"  {name:<62} {ms:6.2f} ms per request")
    print(f"  {f'(not in the floor: the stage files in files of {CHUNK} rows)':<62} {chunked:6.2f} ms per request")
    print(f"  {'floor':<62} {floor:6.2f} ms per request ({floor / REQUEST_BUDGET_MS:.0%} of the budget; "
          f"left for membench's own work: {REQUEST_BUDGET_MS - floor:.2f} ms)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the LongMemEval_S file (gzip JSON)")
    parser.add_argument("--official-repo", type=Path, help="a checkout of xiaowu0162/LongMemEval")
    parser.add_argument("--official-python", default=sys.executable, help="an interpreter with rank_bm25 0.2.2")
    parser.add_argument("--questions", type=int, default=2000, help="target 2's questions")
    parser.add_argument("--cap", type=int, default=32, help="target 2's concurrent requests")
    parser.add_argument("--chars", type=int, default=1400, help="characters of each prompt")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the fake server takes per request")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("1", "2"), help="one target only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="membench-floor-") as tmp:
        if args.only in (None, "1"):
            target1(args, Path(tmp))
        if args.only in (None, "2"):
            target2(args, Path(tmp))


if __name__ == "__main__":
    main()
