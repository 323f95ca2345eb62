"""How busy one LLM-bound run keeps its endpoint, and K concurrent runs against one run.

The slice: ``--questions`` LongMemEval-format questions (the bundled oracle sample repeated with new
ids and texts), the ``full_context`` memory, an LLM reader and the official LongMemEval LLM judge,
against the project's fake OpenAI-compatible server answering every request after ``--delay``
seconds, with the run's request cap ``--cap``. The preparation (canonical tables, ingestion,
retrievals) runs untimed; the timed part is ``dagster job execute -j question_stages``, in which
the answers and the judgments stages do the LLM work.

The server notes when each request arrives, so the figures are counted, not guessed:

- steady-state throughput of each stage: requests between its 10th and 90th percentile arrival
  over that span, against the endpoint's capacity ``cap / delay`` (requests/s);
- start-up: from launching the run to its first request; the gap between the last answer
  request and the first judge request; the tail from the last request to the run's exit;
- with ``--runs K``: the same slice cut into K ranges run as K concurrent runs (one results
  folder, one Dagster instance, each run with the same cap), its throughput against one run's,
  and whether answers and judgments are identical.

    .venv/bin/python benchmarks/llm_throughput.py --questions 2000 --cap 32 --delay 1.0 --runs 1,2,4
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from concurrent_runs import dagster, materialize, results, wait_all, write_slice  # noqa: E402
from concurrent_runs import write_config as base_config  # noqa: E402
from run_env import dagster_env  # noqa: E402

from pipeline.llm.fake_server import FakeOpenAIServer  # noqa: E402
from pipeline.report.refresh import REPORT_WORK  # noqa: E402
from pipeline.store.results import CATALOG_WORK  # noqa: E402
from pipeline.util.coalesce import CoalesceCounts, Coalescer  # noqa: E402

JUDGE_MARK = "Answer yes or no only."  # in every official LongMemEval judge prompt


def write_config(folder: Path, data: Path, base_url: str, cap: int, quota: dict[str, int]) -> Path:
    """concurrent_runs' config with the official LongMemEval LLM judge, the run's cap and the quota."""
    path = base_config(folder, data, base_url)
    cfg = yaml.safe_load(path.read_text())
    cfg["judges"] = [{"name": "lme_official_llm_judge", "kind": "lme_official_llm_judge"}]
    cfg["llm"].update({"max_concurrency": cap, **quota})
    path.write_text(yaml.safe_dump(cfg))
    return path


@dataclass(frozen=True)
class StageRate:
    requests: int
    steady_rps: float  # between the 10th and 90th percentile arrival
    first: float
    last: float


def stage_rate(times: list[float]) -> StageRate | None:
    if len(times) < 10:
        return None
    times = sorted(times)
    lo, hi = len(times) // 10, (len(times) * 9) // 10
    span = times[hi] - times[lo]
    return StageRate(len(times), (hi - lo) / span if span > 0 else float("inf"), times[0], times[-1])


def shared_work(folder: Path) -> dict[str, CoalesceCounts]:
    """How often the catalog rebuild and the report refresh ran / were found done (pipeline/util/coalesce.py)."""
    root = folder / "results"
    return {name: Coalescer(root, name).counts() for name in (CATALOG_WORK, REPORT_WORK)}


def shared_work_line(before: dict[str, CoalesceCounts], after: dict[str, CoalesceCounts]) -> str:
    parts = [
        f"{name} {after[name].done - before[name].done} run, {after[name].skipped - before[name].skipped} found done"
        for name in after
    ]
    return "  whole-folder work during the runs: " + "; ".join(parts)


def timed_mode(
    folder: Path, data: Path, keys: list[str], runs: int, server: FakeOpenAIServer, cap: int, quota: dict[str, int]
) -> tuple[float, float]:
    """Prepare untimed, then ``runs`` concurrent runs of the per-question stages: (start, wall seconds).

    Prints how often the catalog and the report were rebuilt by the timed runs.
    """
    env = dagster_env(folder, write_config(folder, data, server.base_url, cap, quota))
    wait_all([dagster(["job", "execute", "-j", "retrieval_benchmark"], env)])
    size = -(-len(keys) // runs)
    chunks = [keys[i : i + size] for i in range(0, len(keys), size)]
    with server.lock:
        server.timeline.clear()
        server.accepted.clear()
        server.rejected = 0
        server.rejected_by.clear()
    before = shared_work(folder)
    load = os.getloadavg()[0]
    cpu, own = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    procs = [materialize(chunk, env) for chunk in chunks]
    sampler = CpuSampler([p.pid for p in procs])
    wait_all(procs)
    wall = time.monotonic() - start
    sampler.stop()
    used, own_used = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    runs_cpu = used.ru_utime - cpu.ru_utime + used.ru_stime - cpu.ru_stime
    server_cpu = own_used.ru_utime - own.ru_utime + own_used.ru_stime - own.ru_stime
    with server.lock:
        requests = len(server.timeline)
    print(
        f"  CPU of the runs {runs_cpu:.1f} s (user+sys), of the fake server (this process) {server_cpu:.1f} s; "
        f"load average at start {load:.1f} on {os.cpu_count()} cores"
    )
    print(cpu_ceiling(runs_cpu, server_cpu, requests, runs * cap / server.default.delay_s))
    print(shared_work_line(before, shared_work(folder)))
    print(sampler.split_line(server, runs_cpu, requests))
    return start, wall


class CpuSampler:
    """CPU (user + sys, from ``/proc``) of the runs' processes, sampled every ``every_s`` while they run.

    Why: the CPU of a run is known only once it exits (``RUSAGE_CHILDREN``), which lumps the
    per-request work of the answers and judgments stages with the run's end (catalog, manifest,
    report); the samples split it at the endpoint's last request.
    """

    def __init__(self, pids: list[int], every_s: float = 0.2) -> None:
        self.pids = pids
        self.every_s = every_s
        self.samples: list[tuple[float, float]] = []  # (time.monotonic(), CPU seconds of the runs so far)
        self._stop = threading.Event()
        self._tick = os.sysconf("SC_CLK_TCK")
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self._thread.start()

    def cpu_s(self) -> float:
        total = 0
        for pid in self.pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited (and reaped): its CPU is in RUSAGE_CHILDREN, not here
            total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        return total / self._tick

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), self.cpu_s()))
            self._stop.wait(self.every_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def split_line(self, server: FakeOpenAIServer, runs_cpu: float, requests: int) -> str:
        """The runs' CPU up to the endpoint's first request (start-up), from it to the last one (the
        requests' own work, per request) and after it (the run's end)."""
        with server.lock:
            times = [t for t, _ in server.timeline]
        if not times or not requests:
            return "  CPU up to the last request: not sampled"
        first = self.cpu_at(min(times))
        last = self.cpu_at(max(times))
        return (
            f"  CPU of the runs: start-up (to the first request) {first:.1f} s; first to last request "
            f"{last - first:.1f} s = {1000 * (last - first) / requests:.1f} ms per request; "
            f"after the last request {runs_cpu - last:.1f} s (the run's end)"
        )

    def cpu_at(self, when: float) -> float:
        """The runs' CPU at the last sample taken at or before ``when`` (0 before the first)."""
        return max((cpu for t, cpu in self.samples if t <= when), default=0.0)


def cpu_ceiling(runs_cpu: float, server_cpu: float, requests: int, capacity: float) -> str:
    """CPU per LLM request (runs' and server's, fixed costs included) and the request rate the cores allow.

    Why: the fake endpoint and every run share this machine's cores; when the CPU one request costs,
    times the rate the runs' caps allow, exceeds the cores, K runs cannot scale K-fold here.
    """
    if not requests:
        return "  no requests: no CPU per request"
    per_request = (runs_cpu + server_cpu) / requests
    cores = os.cpu_count() or 1
    runs_ms, server_ms = 1000 * runs_cpu / requests, 1000 * server_cpu / requests
    return (
        f"  CPU per LLM request {runs_ms:.1f} ms in the runs + {server_ms:.1f} ms in the server (fixed costs "
        f"included): {cores} cores allow at most {cores / per_request:.0f} requests/s; the runs' caps allow "
        f"{capacity:.0f}/s"
    )


def report(label: str, server: FakeOpenAIServer, start: float, wall: float, n: int, capacity: float) -> None:
    with server.lock:
        timeline = list(server.timeline)
    answers = stage_rate([t for t, rule in timeline if rule != JUDGE_MARK])
    judges = stage_rate([t for t, rule in timeline if rule == JUDGE_MARK])
    print(f"{label}: wall {wall:.1f} s, {n / wall:.2f} questions/s end to end, {len(timeline)} requests")
    for name, rate in (("answers", answers), ("judgments", judges)):
        if rate is None:
            print(f"  {name}: too few requests to measure")
            continue
        print(
            f"  {name}: {rate.requests} requests, steady {rate.steady_rps:.2f} req/s = "
            f"{100 * rate.steady_rps / capacity:.1f} % of cap/latency ({capacity:.1f}/s); "
            f"first at +{rate.first - start:.1f} s, last at +{rate.last - start:.1f} s"
        )
    if server.quota is not None:
        print(quota_figures(server))
    if answers and judges:
        print(
            f"  start-up to first request {answers.first - start:.1f} s; judgments start "
            f"{judges.first - answers.last:+.1f} s after the last answer request; "
            f"exit {start + wall - judges.last:.1f} s after the last request"
        )


def quota_figures(server: FakeOpenAIServer) -> str:
    """The most requests and tokens the server accepted in any window, and the 429s it sent."""
    quota = server.quota
    assert quota is not None
    with server.lock:
        accepted = sorted(server.accepted)
        rejected = server.rejected
        why = ", ".join(f"{k} {v}" for k, v in sorted(server.rejected_by.items())) or "none"
    most_requests = most_tokens = 0
    lo = 0
    tokens = 0
    for hi, (t, n) in enumerate(accepted):  # windows (t - window, t] ending at each arrival
        tokens += n
        while accepted[lo][0] <= t - quota.window_s:
            tokens -= accepted[lo][1]
            lo += 1
        most_requests = max(most_requests, hi - lo + 1)
        most_tokens = max(most_tokens, tokens)
    return (
        f"  quota per {quota.window_s:.0f} s: at most {most_requests} requests (limit {quota.rpm}) and "
        f"{most_tokens} tokens (limit {quota.tpm}) in any window; {rejected} answered 429 ({why})"
    )


def failed_questions(folder: Path) -> int:
    parquet = folder / "results" / "parquet"
    sql = f"""SELECT count(DISTINCT partition_key) FROM read_parquet('{parquet}/*/*.parquet', union_by_name = true)
              WHERE status = 'failed'"""
    return int(duckdb.sql(sql).fetchall()[0][0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--cap", type=int, default=32, help="max_concurrency of each run")
    parser.add_argument("--delay", type=float, default=1.0, help="seconds the fake server takes per request")
    parser.add_argument("--runs", default="1", help="comma-separated K values; 1 is always measured first")
    parser.add_argument("--rpm", type=int, help="requests-per-minute quota: the server enforces it, the config sets it")
    parser.add_argument("--tpm", type=int, help="tokens-per-minute quota: the server enforces it, the config sets it")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    ks = sorted({1, *(int(k) for k in args.runs.split(","))})
    capacity = args.cap / args.delay
    server = FakeOpenAIServer(default_reply="A golden retriever.", default_delay_s=args.delay)
    server.add_rule(JUDGE_MARK, "yes", delay_s=args.delay)
    server.start()
    quota = {k: v for k, v in (("requests_per_minute", args.rpm), ("tokens_per_minute", args.tpm)) if v}
    if quota:
        server.set_quota(args.rpm, args.tpm)
    walls: dict[int, float] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="membench-llm-throughput-") as tmp:
            root = args.keep or Path(tmp)
            root.mkdir(parents=True, exist_ok=True)
            data = root / "slice.json"
            keys = write_slice(data, args.questions)
            print(f"slice: {args.questions} questions, cap {args.cap}, {args.delay:.2f} s/request (LLM reader + judge)")
            for k in ks:
                start, walls[k] = timed_mode(root / f"k{k}", data, keys, k, server, args.cap, quota)
                report(f"{k} run(s)", server, start, walls[k], args.questions, capacity * k)
                print(f"  failed questions: {failed_questions(root / f'k{k}')}")
                if k > 1:
                    same = results(root / "k1") == results(root / f"k{k}")
                    print(
                        f"  {k} concurrent runs: {walls[1] / walls[k]:.2f}x one run's throughput "
                        f"(target >= {0.8 * k:.1f}x); identical answers and judgments: {same}"
                    )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
