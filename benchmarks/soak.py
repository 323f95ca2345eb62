"""Soak: kill -9 inside a chosen stage, a faulty endpoint, a bad record; then rerun.

The config: two LongMemEval-format datasets (the bundled oracle sample, and a copy with prompts of
its own where one record has no ``question``: a failed question), the ``full_context`` memory, an
LLM reader and the official LongMemEval LLM judge, both against the project's fake
OpenAI-compatible server, which answers each request with a 429 (Retry-After 0), a 500 or a hang
past the client's 2 s timeout, each with probability ``--fault-rate`` / 3.

Kill moments follow real progress, never a clock (a loaded machine stretches every stage): each
trial draws a target stage (start, canonical, embeddings, memory, retrieval, answers, judgments,
report; weighted toward the LLM stages) and SIGKILLs the run's process group at a random point
inside it: for answers / judgments the fake server fires the kill itself when the k-th request of
that stage arrives (open at the kill) or once it is answered (k uniform in 1..N, N the "to
compute" count the stage logs at its start); for memory /
retrieval when k of the stage's per-question files have been written; for canonical, embeddings
and the reports after the k-th log line of the step; for start once the run exists in the Dagster
instance but no step has logged. Trials come in generations: a fresh results folder and Dagster
home, 2-3 kill trials with targets in pipeline order (so each one still has work), then the
faults stop and the job reruns until nothing is left missing, and the generation is checked:

- rows lost: ``progress`` rows missing, or failed other than the bad record's question;
- rows duplicated: rows of a stage table beyond one per (question, unit);
- LLM replies requested twice: requests for a prompt whose reply was already delivered, except
  replies in flight at a kill (open at the server when it landed, or delivered in the
  ``--in-flight`` s before it and absent from the LLM cache after it);
- partition-status mismatches: Dagster partition status vs ``progress``, every stage;
- runs left STARTED / NOT_STARTED / STARTING after the final run.

Each generation also starts with a hanging endpoint on a fresh Dagster home. The home is new and
empty of storage, prepared by the set-up's own script (scripts/dagster_home.sh: storage created
before any run) in odd generations and left bare (dagster.yaml only) in even ones; the
generation's first run starts together with a second process that opens the same instance (as
``dagster dev`` or a second run would). In that run the fake server stops answering anything,
chat requests and the client's probes alike (``hang_everything``: it accepts connections, never
answers), from the k-th reader request (k uniform in 1..8) until the run ends; the run must end on
its own, its answers recorded failed, and the final reruns must fill them. After the generation:

- fresh homes broken: a SQLite file of the home with other than one schema revision;
- runs on a hanging endpoint that did not end (by ``--trial-timeout``).

All must be 0. Each trial prints the stage the kill landed in, the requests seen so far and the
outcome; each hanging run the requests it held, how long the run took after the hang and how it
ended; the end prints kills per stage and the figures summed over the generations.

    nice -n 5 .venv/bin/python benchmarks/soak.py --trials 30
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from run_env import dagster_env  # noqa: E402 (benchmarks/run_env.py)
from soak_counts import (  # noqa: E402 (benchmarks/soak_counts.py)
    STEP_STAGE,
    TARGETS,
    WEIGHTS,
    Request,
    broken_files,
    delivered_uncached,
    in_flight_at,
    passed,
    requested_twice,
    rows_lost,
    step_of_line,
    table,
    to_compute,
    twice_pairs,
    unexpected_ok,
)

from pipeline.llm.cache import cache_key  # noqa: E402
from pipeline.llm.fake_server import FakeOpenAIServer, Fault, Rule  # noqa: E402
from resources.instance_home import schema_revisions  # noqa: E402

SAMPLE = ROOT / "pipeline/sample_data/longmemeval_oracle_sample.json"
PREFIX = "soak"
JUDGE_MATCH = "Answer yes or no only."  # in every LongMemEval judge prompt
BAD_INDEX = 2  # the record of the second dataset that loses its question
FILE_STAGES = {"memory": "ingestion", "retrieval": "retrievals"}  # per-question files under parquet/
LINE_KILLS = {"canonical": 4, "embeddings": 3, "report": 4}  # kill after line k, k uniform in 1..this
HANG_FROM = 8  # the endpoint hangs from the k-th reader request of a generation's first run, k in 1..this
OPEN_INSTANCE = "import dagster; dagster.DagsterInstance.get().get_runs(limit=1)"  # the second process
_CACHE_FIELDS = {"model", "messages", "stream", "n"}


@dataclass
class Entry:
    """One request as the server saw it (mutable until it ends)."""

    id: int
    key: str
    kind: str  # "reader" or "judge"
    begin: float
    end: float | None = None
    delivered: bool = False


@dataclass(frozen=True)
class Armed:
    """A kill the server fires itself: at the ``nth`` request of ``kind`` (counted in the log)."""

    kind: str
    nth: int
    phase: str  # "request" (at its arrival) or "reply" (once answered)
    fire: Callable[[], None]


class SoakServer(FakeOpenAIServer):
    """The fake server, spoiling a random share of requests (429 / 500 / a hang); logs every request."""

    def __init__(self, fault_rate: float, hang_s: float, seed: int) -> None:
        super().__init__(default_reply="A golden retriever.")
        self.add_rule(JUDGE_MATCH, "yes")  # a valid verdict
        self.fault_rate = fault_rate
        self.hang_s = hang_s
        self.rng = random.Random(seed)
        self.log: list[Entry] = []
        self.faults: Counter[str] = Counter()
        self._mine = threading.local()  # begin() and end() run on the same handler thread
        self.armed: Armed | None = None

    def arm(self, kind: str, nth: int, phase: str, fire: Callable[[], None]) -> None:
        """Call ``fire`` (the kill) from the server itself when the ``nth`` next request of ``kind``
        arrives (``phase`` "request": it is open at the kill) or has been answered ("reply")."""
        with self.lock:
            self.armed = Armed(kind, sum(1 for e in self.log if e.kind == kind) + nth, phase, fire)

    def _fire(self, entry: Entry, phase: str) -> None:
        with self.lock:
            armed = self.armed
            if armed is None or (armed.kind, armed.phase) != (entry.kind, phase):
                return
            if sum(1 for e in self.log[: entry.id + 1] if e.kind == entry.kind) != armed.nth:
                return
            self.armed = None
        armed.fire()

    def begin(self, body: dict[str, Any], auth: str) -> tuple[Rule, Fault | None, dict[str, Any]]:
        rule, fault, message = super().begin(body, auth)
        params = {k: v for k, v in body.items() if k not in _CACHE_FIELDS}
        key = cache_key(str(body.get("model")), body.get("messages") or [], params)
        with self.lock:
            r = self.rng.random()
            if fault is None and r < self.fault_rate:
                kinds = [Fault.rate_limited("0"), Fault.server_error(500), Fault.hang(self.hang_s)]
                fault = kinds[int(r * 3 / self.fault_rate) % 3]
                self.faults[f"{fault.status}" if fault.kind == "status" else fault.kind] += 1
            kind = "judge" if rule.match == JUDGE_MATCH else "reader"
            entry = Entry(len(self.log), key, kind, time.time(), delivered=fault is None)
            self.log.append(entry)
        self._mine.entry = entry
        self._fire(entry, "request")
        return rule, fault, message

    def end(self) -> None:
        entry: Entry = self._mine.entry
        entry.end = time.time()
        super().end()
        self._fire(entry, "reply")

    def request_log(self) -> list[Request]:
        with self.lock:
            return [Request(e.id, e.key, e.begin, e.end, e.delivered) for e in self.log]


def _datasets(folder: Path) -> tuple[Path, Path, str]:
    """The two dataset files, and the partition key of the bad record."""
    records = json.loads(SAMPLE.read_text())
    good = folder / "good.json"
    good.write_text(json.dumps(records))
    for rec in records:  # prompts of their own: the LLM cache must not answer the copy from the original
        rec["question"] = f"{rec['question']} (second dataset)"
    del records[BAD_INDEX]["question"]  # one bad record: a failed question, never a crash
    bad = folder / "bad_record.json"
    bad.write_text(json.dumps(records))
    return good, bad, f"badrec__{records[BAD_INDEX]['question_id']}"


def _config(folder: Path, base_url: str) -> tuple[Path, str]:
    good, bad, bad_key = _datasets(folder)
    # probe_after_s 1: a request hanging past 1 s is probed (the server answers the probe unless it hangs whole)
    llm = {"base_url": base_url, "model": "fake-model", "api_key_env": "MEMBENCH_SOAK_KEY", "timeout_s": 2,
           "probe_after_s": 1, "connect_timeout_s": 1}  # fmt: skip
    cfg = {
        "name": PREFIX,
        "results_dir": str(folder / "res"),
        "datasets": [
            {"name": "good", "loader": "longmemeval", "path": str(good)},
            {"name": "badrec", "loader": "longmemeval", "path": str(bad)},
        ],
        "memory_systems": [{"name": "full", "kind": "full_context"}],
        "readers": [{"name": "llm", "kind": "llm"}],
        "judges": [{"name": "judge", "kind": "lme_official_llm_judge"}],
        "llm": {**llm, "stop_after_unreachable": 0},
    }
    path = folder / "soak.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path, bad_key


def _start(env: dict[str, str], log: Path) -> tuple[subprocess.Popen[str], queue.Queue[tuple[float, str] | None]]:
    """Start the job; its output lines arrive on the queue (None at its end) and go to ``log``."""
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster"), "job", "execute", "-j", "full_benchmark"],
        cwd=ROOT,
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[tuple[float, str] | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        with log.open("a") as out:
            for line in proc.stdout:
                out.write(line)
                lines.put((time.time(), line))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return proc, lines


@dataclass
class Plan:
    """Where one trial kills: ``target`` stage, and the progress ``k`` inside it that triggers it."""

    target: str
    k: int | None = None  # set when the stage starts (it needs the stage's "to compute" count)
    base: Any = None  # the progress counter's value when the stage started
    lines: Counter[str] = field(default_factory=Counter)


@dataclass
class Trial:
    target: str
    landed: str
    progress: str
    requests: int
    in_flight: set[int]
    kill_at: float | None
    run_status: str
    rc: int | None


def _files(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.parquet")} if folder.is_dir() else {}


def _runs(instance: Any) -> list[Any]:
    return list(instance.get_runs())


class Killer:
    """SIGKILLs the run's process group once, from whichever thread asks first."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lock = threading.Lock()
        self.at: float | None = None

    def __call__(self) -> None:
        with self.lock:
            if self.at is None:
                self.at = time.time()
                os.killpg(self.proc.pid, signal.SIGKILL)


class Trigger:
    """Watches one run's progress and says when the kill is due."""

    def __init__(self, plan: Plan, rng: random.Random, server: SoakServer, res: Path, instance: Any,
                 killer: Killer) -> None:  # fmt: skip
        self.plan, self.rng, self.server, self.res, self.instance = plan, rng, server, res, instance
        self.killer = killer
        self.stage = "start"  # the stage of the last step that logged
        self.runs_before = len(_runs(instance))
        self.next_poll = 0.0
        self.detail = ""
        self.passed = False  # a step after the target stage has logged

    def line(self, text: str) -> None:
        found = step_of_line(text, PREFIX)
        if found is None:
            return
        step, message = found
        stage = STEP_STAGE[step]
        self.stage = stage
        self.passed = self.passed or passed(step, self.plan.target)
        plan = self.plan
        plan.lines[stage] += 1
        if stage != plan.target or plan.k is not None:
            return
        n = to_compute(message)
        if stage in LINE_KILLS:
            plan.k = self.rng.randint(1, LINE_KILLS[stage])
        elif stage in FILE_STAGES:
            plan.k = self.rng.randint(0, max((n or 0) - 1, 0))
            plan.base = _files(self.res / "parquet" / FILE_STAGES[stage])
        else:
            plan.k = self.rng.randint(1, n) if n else 0
            phase = self.rng.choice(["request", "reply"])
            if plan.k:
                kind = "judge" if stage == "judgments" else "reader"
                self.server.arm(kind, plan.k, phase, self.killer)
            self.detail = f"at {phase} {plan.k} of {n} to compute"
            return
        self.detail = f"{n} to compute" if n is not None else ""

    def due(self) -> bool:
        plan, stage = self.plan, self.stage
        if self.passed:
            return True  # the target stage ended before its k-th step of progress: kill now
        if plan.target == "start":
            now = time.monotonic()
            if now < self.next_poll:
                return False
            self.next_poll = now + 0.2
            return len(_runs(self.instance)) > self.runs_before
        if stage != plan.target or plan.k is None:
            return False
        if stage in LINE_KILLS:
            self.detail = f"line {plan.lines[stage]} of the step"
            return plan.lines[stage] >= plan.k
        if stage in FILE_STAGES:
            now_files = _files(self.res / "parquet" / FILE_STAGES[stage])
            written = sum(1 for name, t in now_files.items() if plan.base.get(name) != t)
            self.detail = f"{written} files written (k={plan.k}), " + self.detail.split(", ")[-1]
            return written >= plan.k
        return plan.k == 0 or self.killer.at is not None  # the server fires the kill itself


def _trial(env: dict[str, str], plan: Plan, rng: random.Random, server: SoakServer, folder: Path, instance: Any,
           log: Path, timeout_s: float) -> Trial:  # fmt: skip
    """One run, SIGKILLed when the trigger says so (or left to end if it ends first)."""
    before = len(server.log)
    proc, lines = _start(env, log)
    killer = Killer(proc)
    trigger = Trigger(plan, rng, server, folder / "res", instance, killer)
    deadline = time.monotonic() + timeout_s
    ended = False
    while not ended and time.monotonic() < deadline:
        try:
            item = lines.get(timeout=0.05)
        except queue.Empty:
            item = (0.0, "")
        if item is None:
            ended = True
            break
        trigger.line(item[1])
        if trigger.due():
            break
    server.armed = None
    if ended and killer.at is None:  # ended by itself (a kill the server fired can end the output first)
        rc = proc.wait()
        return Trial(plan.target, trigger.stage, "ended first", len(server.log) - before, set(), None, "-", rc)
    killer()
    kill_at = killer.at
    assert kill_at is not None
    proc.wait()
    open_ids = in_flight_at(server.request_log()[before:], kill_at)  # the process is gone: no more arrive
    runs = _runs(instance)
    status = runs[0].status.value if runs else "no run"
    progress = trigger.detail or f"k={plan.k}"
    return Trial(plan.target, trigger.stage, progress, len(server.log) - before, open_ids, kill_at, status, None)


@dataclass(frozen=True)
class HangRun:
    """The generation's first run: a fresh home opened by two processes, then an endpoint that hangs."""

    k: int  # the endpoint hung from this reader request on
    hung: bool  # it did (the run reached the k-th request)
    held: dict[str, int]  # requests it held unanswered, by path
    after_s: float | None  # seconds from the hang to the run's end
    rc: int | None  # the run's exit status (None: killed at the trial timeout)
    companion_rc: int | None


def _hang_run(env: dict[str, str], server: SoakServer, rng: random.Random, log: Path, timeout_s: float) -> HangRun:
    """The first run on the fresh home, started with a second process opening the instance; the endpoint
    hangs from the k-th reader request until the run ends on its own."""
    k = rng.randint(1, HANG_FROM)
    hung_at: list[float] = []

    def hang() -> None:
        hung_at.append(time.time())
        server.hang_everything()

    server.arm("reader", k, "request", hang)
    companion = subprocess.Popen([sys.executable, "-c", OPEN_INSTANCE], cwd=ROOT, env=env)
    proc, lines = _start(env, log)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if lines.get(timeout=0.5) is None:
                break
        except queue.Empty:
            continue
    else:
        Killer(proc)()
    rc = proc.wait() if time.monotonic() < deadline else None
    ended = time.time()
    server.armed = None
    server.hang_everything(False)
    with server.lock:
        held = dict(server.hung)
        server.hung.clear()
    after = ended - hung_at[0] if hung_at else None
    return HangRun(k, bool(hung_at), held, after, rc, companion.wait(timeout=120))


def _broken_home(home: Path) -> list[str]:
    """The home's SQLite files that do not record exactly one schema revision."""
    return broken_files({str(db.relative_to(home)): schema_revisions(db) for db in sorted(home.rglob("*.db"))})


def _cached(res: Path) -> set[str]:
    return {p.stem for p in (res / "llm_cache").glob("??/*.json")}


def _checks(folder: Path, config: Path, server: SoakServer, excused: set[int], bad_key: str) -> dict[str, int]:
    import dagster as dg

    from assets.partition_status import status_mismatches
    from pipeline.config.model import load_config
    from pipeline.definitions import partition_keys
    from pipeline.store.results import STAGE_TABLES, ResultStore

    keys = partition_keys(load_config(str(config)))
    store = ResultStore(results_dir=str(folder / "res"))
    progress = store.query("SELECT stage, partition_key, status FROM progress").to_pylist()
    dup = 0
    for stage in STAGE_TABLES:
        sql = f"SELECT count(*) - count(DISTINCT (partition_key, unit)) AS n FROM {stage}"
        dup += store.query(sql).column("n")[0].as_py()
    with dg.DagsterInstance.get() as instance:
        mismatches = status_mismatches(instance, PREFIX, keys, store)
        alive = (dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING)
        stuck = [r for r in instance.get_runs() if r.status in alive]
    for m in mismatches:
        print(f"    status mismatch: {m}", flush=True)
    requests = server.request_log()
    kinds = {e.id: e.kind for e in server.log}
    for first, again in twice_pairs(requests, excused):
        print(f"    requested twice: {kinds[again.id]} {again.key[:12]}: request {first.id} answered at "
              f"{first.end:.3f}, request {again.id} at {again.begin:.3f}", flush=True)  # fmt: skip
    (folder / "requests.json").write_text(json.dumps(
        {"requests": [vars(e) for e in server.log], "excused": sorted(excused)}))  # fmt: skip
    return {
        "rows lost": rows_lost(progress, {bad_key}),
        "rows duplicated": int(dup),
        "LLM replies requested twice": requested_twice(requests, excused),
        "partition-status mismatches": len(mismatches),
        "runs left STARTED/NOT_STARTED": len(stuck),
        "bad record's rows scored as done": unexpected_ok(progress, {bad_key}),
        # also proves the soak computes the client's cache keys (else every reply would count)
        "replies delivered, never cached": len(
            {r.key for r in requests if r.delivered and r.id not in excused} - _cached(folder / "res")
        ),
    }


def _targets(rng: random.Random, n: int, only: list[str]) -> list[str]:
    """``n`` targets drawn by weight, in pipeline order (so each later trial still has work)."""
    names = only or list(WEIGHTS)
    drawn = rng.choices(names, weights=[WEIGHTS[s] for s in names], k=n)
    return sorted(drawn, key=TARGETS.index)


def _generation(g: int, targets: list[str], args: argparse.Namespace, server: SoakServer, rng: random.Random,
                base: Path, done: int) -> tuple[list[Trial], dict[str, int]]:  # fmt: skip
    import dagster as dg

    folder = base / f"gen{g:02d}"
    folder.mkdir(parents=True, exist_ok=True)
    config, bad_key = _config(folder, server.base_url)
    env = dagster_env(folder, config, fresh=True)
    home = Path(env["DAGSTER_HOME"])
    set_up = g % 2 == 1  # odd generations: the home as the set-up prepares it; even: bare
    if set_up:
        subprocess.run(["bash", str(ROOT / "scripts" / "dagster_home.sh"), str(home)], env=env, check=True,
                       capture_output=True, timeout=300)  # fmt: skip
    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    with server.lock:
        server.log = []
    server.fault_rate = args.fault_rate
    t0 = time.monotonic()
    hang = _hang_run(env, server, rng, folder / "runs.log", args.trial_timeout)
    print(
        f"gen {g}: {'set-up' if set_up else 'bare'} fresh home opened by two processes at once (second exit "
        f"{hang.companion_rc}); endpoint hung from reader request {hang.k}: "
        + (f"held {hang.held}, run ended rc={hang.rc} {hang.after_s:.0f} s after the hang"
           if hang.hung else f"the run made fewer requests (rc={hang.rc})")
        + f" ({time.monotonic() - t0:.0f} s)",
        flush=True,
    )  # fmt: skip
    trials: list[Trial] = []
    excused: set[int] = set()
    with dg.DagsterInstance.get() as instance:
        for target in targets:
            t0 = time.monotonic()
            trial = _trial(env, Plan(target), rng, server, folder, instance, folder / "runs.log", args.trial_timeout)
            late: set[int] = set()
            if trial.kill_at is not None:
                late = delivered_uncached(server.request_log(), trial.kill_at, _cached(folder / "res"), args.in_flight)
                excused |= trial.in_flight | late
            trials.append(trial)
            outcome = "killed" if trial.kill_at is not None else f"ended rc={trial.rc} before the kill"
            print(
                f"trial {done + len(trials):>2} (gen {g}): target {target:<10} landed in {trial.landed:<10} "
                f"[{trial.progress}] requests {trial.requests} (gen {len(server.log)}), in flight at the kill "
                f"{len(trial.in_flight)} open + {len(late)} delivered uncached; run {trial.run_status}; "
                f"{outcome} ({time.monotonic() - t0:.0f} s)",
                flush=True,
            )
    server.fault_rate = 0.0
    rcs = []
    for _ in range(3):  # the bad record keeps the run failed (rc 1): rerun until nothing is left missing
        proc, lines = _start(env, folder / "runs.log")
        while lines.get() is not None:
            pass
        rcs.append(proc.wait())
        figures = _checks(folder, config, server, excused, bad_key)
        if figures["rows lost"] == 0:
            break
    broken = _broken_home(home)
    figures["fresh homes broken"] = int(bool(broken))
    figures["runs on a hanging endpoint that did not end"] = int(hang.rc is None)
    for name in broken:
        print(f"    broken home file: {name}", flush=True)
    print(f"  gen {g}: final runs exit {rcs}; {len(server.log)} requests; " + ", ".join(
        f"{k} {v}" for k, v in figures.items()), flush=True)  # fmt: skip
    return trials, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--fault-rate", type=float, default=0.3)
    parser.add_argument("--in-flight", type=float, default=5.0, help="s before a kill a reply may go uncached")
    parser.add_argument("--trial-timeout", type=float, default=900.0)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--only", nargs="*", default=[], choices=TARGETS, help="draw targets from these stages only")
    parser.add_argument("--keep", type=Path, default=None, help="use this folder (kept) instead of a temporary one")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    server = SoakServer(args.fault_rate, hang_s=5.0, seed=args.seed).start()
    base = args.keep or Path(tempfile.mkdtemp(prefix="membench-soak-"))
    start = time.monotonic()
    trials: list[Trial] = []
    totals: Counter[str] = Counter()
    requests = 0
    g = 0
    while len(trials) < args.trials:
        g += 1
        n = min(rng.randint(2, 3), args.trials - len(trials))
        got, figures = _generation(g, _targets(rng, n, args.only), args, server, rng, base, len(trials))
        trials += got
        totals.update(figures)
        requests += len(server.log)
    server.stop()
    killed = [t for t in trials if t.kill_at is not None]
    landed = Counter(t.landed for t in killed)
    print(
        f"soak: {len(trials)} trials in {g} generations ({len(killed)} killed with kill -9, "
        f"{len(trials) - len(killed)} ended before the kill), {time.monotonic() - start:.0f} s; "
        f"{requests} requests to the fake endpoint, faults injected {dict(server.faults)}; "
        f"{sum(len(t.in_flight) for t in killed)} requests open at a kill"
    )
    print(table([(s, landed[s]) for s in TARGETS], {k: totals[k] for k in figures}))


if __name__ == "__main__":
    main()
