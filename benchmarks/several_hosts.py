"""Several machines, one benchmark: Dagster's Celery run launcher on test hosts in network namespaces.

What it does (run as root; never part of the unit suite), once with 1 worker host and once with 2:

- test hosts: Linux network namespaces joined by veth pairs on 10.238.77.0/24 (a bridge inside the
  hub's namespace; nothing touches the machine's own network). Each host's processes also get their
  own hostname (UTS namespace) and process table (PID namespace), so a host can only tell another
  host's runs from the shared results folder and the shared instance, as on real machines;
- the hub (10.238.77.1): PostgreSQL (the Dagster instance), Redis (the Celery broker and result
  backend), ``dagster-daemon run`` and ``dagster-webserver``, and the LLM endpoint (the project's
  fake OpenAI-compatible server with a fixed latency, counting every request);
- each worker host: Celery workers of ``dagster_celery.app`` (``--pool solo``, one run per worker
  process, ``--workers`` processes per host); the instance's ``CeleryRunLauncher`` sends them runs;
- one results folder, compute-log folder and config for all hosts: network namespaces share the
  mount namespace, so one local path is what every host sees (the kernel here has no NFS client,
  see docs/guide/deploying.md);
- a UI-style backfill (the webserver's GraphQL ``launchPartitionBackfill``) of the four per-question
  stages, split into runs of ``MEMBENCH_BACKFILL_CHUNK`` questions. With 2 worker hosts, the second
  host is killed mid-run (every process it runs, SIGKILL), then the questions not done are backfilled
  again.

It prints per case the runs, questions, LLM requests and wall time, shows that a run executed on a
worker has its stdout/stderr readable from the hub, and ends with
``requested twice N; status mismatches N; left STARTED N; questions lost N`` (exit 1 unless all 0).

    .venv/bin/python benchmarks/several_hosts.py --questions 40 --delay 0.3
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from concurrent_runs import write_slice  # noqa: E402 (benchmarks/concurrent_runs.py)
from soak import SoakServer  # noqa: E402 (benchmarks/soak.py)
from soak_counts import in_flight_at, requested_twice  # noqa: E402 (benchmarks/soak_counts.py)

NET = "10.238.77"
HUB_IP = f"{NET}.1"
PG_PORT, REDIS_PORT, UI_PORT = 5432, 6379, 3070
PREFIX = "hosts"
STAGES = ("ingestion", "retrievals", "answers", "judgments")
BIN = ROOT / ".venv" / "bin"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
CLONE_NEWNET = 0x40000000
TERMINAL = {"COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED", "COMPLETED"}
ALIVE = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"}
T = TypeVar("T")

LAUNCH = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
BACKFILL = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  ... on PartitionBackfill { status runs(limit: 500) { id status } } } }"""
ASSET = """query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { __typename } }"""
LOGS = """query($key: [String!]!) { capturedLogs(logKey: $key) { stdout stderr } }"""


# ---- test hosts ---------------------------------------------------------------------------------
def sh(*args: str) -> None:
    """A set-up command that must work (ip, runuser): its error output ends the benchmark."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")


def netns_names(workers: int) -> list[str]:
    return ["mbh-hub", *(f"mbh-w{i}" for i in range(1, workers + 1))]


def make_network(workers: int) -> None:
    """The hub's namespace holds a bridge; each worker's namespace a veth whose peer joins it."""
    names = netns_names(workers)
    taken = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    if taken & set(names):
        raise SystemExit(f"namespaces {sorted(taken & set(names))} exist (an earlier run?): `ip netns del` them")
    for name in names:
        sh("ip", "netns", "add", name)
        sh("ip", "-n", name, "link", "set", "lo", "up")
    sh("ip", "-n", "mbh-hub", "link", "add", "br0", "type", "bridge")
    sh("ip", "-n", "mbh-hub", "addr", "add", f"{HUB_IP}/24", "dev", "br0")
    sh("ip", "-n", "mbh-hub", "link", "set", "br0", "up")
    for i, name in enumerate(names[1:], start=1):
        sh("ip", "link", "add", f"to-w{i}", "netns", "mbh-hub", "type", "veth", "peer", "name", "eth0", "netns", name)
        sh("ip", "-n", "mbh-hub", "link", "set", f"to-w{i}", "master", "br0", "up")
        sh("ip", "-n", name, "addr", "add", f"{NET}.{10 + i}/24", "dev", "eth0")
        sh("ip", "-n", name, "link", "set", "eth0", "up")


def drop_network(workers: int) -> None:
    """Deleting a namespace deletes its veth end, and with it the peer in the hub's bridge."""
    for name in netns_names(workers):
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=60)


def enter_netns(fd: int) -> None:
    """Move this thread into the network namespace open as ``fd`` (Python 3.11 has no os.setns): the
    endpoint's socket, the GraphQL and instance connections of this process are then the hub's."""
    if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


@dataclass
class Host:
    """One test host: a namespace and the processes this benchmark started in it."""

    name: str
    logs: Path
    own_pids: bool = True  # its own process table (PID namespace), as a machine or a container has
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def spawn(self, argv: list[str], env: dict[str, str], log: str, pidns: bool = True) -> subprocess.Popen[bytes]:
        """``argv`` with this host's name as its hostname; with ``own_pids`` as PID 1 of a new PID
        namespace (``--kill-child``: when the returned process dies, everything it started on this
        host dies too). Not ``pidns`` for a command that changes its user (the kernel then drops its
        parent-death signal): it runs as the returned process itself."""
        wrap = ["ip", "netns", "exec", self.name]
        if pidns:
            pids = ["--pid", "--fork", "--kill-child", "--mount-proc"] if self.own_pids else []
            wrap += ["unshare", "--uts", *pids, "sh", "-c", f'hostname {self.name} && exec "$@"', "sh"]
        with (self.logs / f"{self.name}-{log}.log").open("ab") as out:
            proc = subprocess.Popen([*wrap, *argv], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def kill(self) -> None:
        """SIGKILL every process started here (by its pid, with the processes each started), and wait
        for each (bounded)."""
        for proc in self.procs:
            if proc.poll() is None:
                for pid in [proc.pid, *descendants(proc.pid)]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                print(f"  {self.name}: pid {proc.pid} did not exit in 30 s", flush=True)


def descendants(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs (a step process of a run on a shared-PID host)."""
    import psutil

    try:
        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def wait_for(what: str, fn: Callable[[], T | None], timeout_s: float, every_s: float = 1.0) -> T:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            value = fn()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(every_s)
    raise SystemExit(f"timed out after {timeout_s:.0f} s waiting for {what}")


# ---- hub services -------------------------------------------------------------------------------
def as_postgres(*argv: str) -> list[str]:
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv]


def start_postgres(hub: Host, root: Path, env: dict[str, str]) -> str:
    """A fresh cluster (trust auth, the test subnet allowed) serving the hub's address; its URL."""
    data = root / "pg"
    data.mkdir()
    shutil.chown(data, "postgres")
    sh(*as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"))
    with (data / "pg_hba.conf").open("a") as hba:
        hba.write(f"host all all {NET}.0/24 trust\n")
    hub.spawn(as_postgres(str(PG_BIN / "postgres"), "-D", str(data), "-p", str(PG_PORT), "-k", str(data),
                          "-c", f"listen_addresses={HUB_IP}"), env, "postgres", pidns=False)  # fmt: skip
    ready = ["ip", "netns", "exec", hub.name, str(PG_BIN / "pg_isready"), "-h", HUB_IP, "-p", str(PG_PORT)]
    wait_for("PostgreSQL", lambda: subprocess.run(ready, capture_output=True).returncode == 0, 60)
    sh("ip", "netns", "exec", hub.name, *as_postgres(str(PG_BIN / "createdb"), "-h", HUB_IP, "-p", str(PG_PORT),
                                                       "-U", "postgres", "membench"))  # fmt: skip
    return f"postgresql+psycopg2://postgres@{HUB_IP}:{PG_PORT}/membench"


def start_redis(hub: Host, env: dict[str, str]) -> None:
    argv = ["redis-server", "--bind", HUB_IP, "--port", str(REDIS_PORT), "--save", "", "--appendonly", "no",
            "--protected-mode", "no", "--daemonize", "no"]  # fmt: skip
    hub.spawn(argv, env, "redis")


def gql(query: str, **variables: Any) -> dict[str, Any]:
    """The webserver's GraphQL API, as the UI calls it (this thread is in the hub's namespace)."""
    body = json.dumps({"query": query, "variables": variables}).encode()
    req = urllib.request.Request(f"http://{HUB_IP}:{UI_PORT}/graphql", data=body,
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=60) as resp:
        out = json.loads(resp.read())
    if "errors" in out:
        raise SystemExit(f"GraphQL error: {out['errors']}")
    return dict(out["data"])


# ---- the benchmark's instance, config and workers ------------------------------------------------
class Endpoint(SoakServer):
    """The fake LLM endpoint on the hub's address (workers reach it over the veths), no faults."""

    host = HUB_IP

    def __init__(self, delay_s: float) -> None:
        super().__init__(fault_rate=0.0, hang_s=0.0, seed=0)
        for rule in (self.default, *self.rules):
            rule.delay_s = delay_s


def write_files(root: Path, questions: int, base_url: str, slots: int) -> tuple[Path, list[str]]:
    """The membench config (LLM reader and judge), the instance yaml and Celery's settings module."""
    data = root / "slice.json"
    keys = write_slice(data, questions)
    cfg = {
        "name": PREFIX,
        "results_dir": str(root / "results"),
        "datasets": [{"name": "lme", "loader": "longmemeval", "path": str(data)}],
        "memory_systems": [{"name": "full", "kind": "full_context"}],
        "readers": [{"name": "llm", "kind": "llm"}],
        "judges": [{"name": "judge", "kind": "lme_official_llm_judge"}],
        "llm": {"base_url": base_url, "model": "fake-model", "api_key_env": "MEMBENCH_HOSTS_KEY"},
    }
    config = root / "hosts.yaml"
    config.write_text(yaml.safe_dump(cfg))
    instance = (ROOT / "configs" / "dagster_celery.yaml").read_text()
    (root / "dagster.yaml").write_text(instance.replace("max_concurrent_runs: 4", f"max_concurrent_runs: {slots}"))
    celery = root / "celery"
    celery.mkdir()
    (celery / "dagster_celery_config.py").write_text(  # read by dagster_celery.app on a worker
        f"broker_url = 'redis://{HUB_IP}:{REDIS_PORT}/0'\nresult_backend = 'redis://{HUB_IP}:{REDIS_PORT}/1'\n"
        "worker_prefetch_multiplier = 1\n"
    )
    return config, keys


def host_env(root: Path, host: str, config: Path, pg_url: str) -> dict[str, str]:
    """The same environment on every host, but each host's own DAGSTER_HOME (same dagster.yaml)."""
    home = root / "homes" / host
    home.mkdir(parents=True)
    shutil.copy(root / "dagster.yaml", home / "dagster.yaml")
    return {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "MEMBENCH_CONFIG": str(config),
        "MEMBENCH_PG_URL": pg_url,
        "MEMBENCH_CELERY_BROKER": f"redis://{HUB_IP}:{REDIS_PORT}/0",
        "MEMBENCH_CELERY_BACKEND": f"redis://{HUB_IP}:{REDIS_PORT}/1",
        "MEMBENCH_COMPUTE_LOGS": str(root / "compute_logs"),
        "MEMBENCH_BACKFILL_CHUNK": os.environ.get("MEMBENCH_BACKFILL_CHUNK", "10"),
        "MEMBENCH_HOSTS_KEY": "unused",
        "DAGSTER_CLI_JOB_EXECUTE_MODULE_NAME": "pipeline.definitions",
        "PYTHONPATH": f"{ROOT}{os.pathsep}{root / 'celery'}",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def start_workers(host: Host, env: dict[str, str], workers: int, pool: str, concurrency: int) -> None:
    for n in range(workers):
        argv = [str(BIN / "celery"), "-A", "dagster_celery.app", "worker", "-Q", "dagster", f"--pool={pool}",
                f"--concurrency={concurrency}", "--prefetch-multiplier=1", "-n", f"{host.name}-{n}@%h",
                "--loglevel=INFO", "--without-gossip", "--without-mingle"]  # fmt: skip
        host.spawn(argv, env, f"celery{n}")


# ---- one case -----------------------------------------------------------------------------------
@dataclass
class Case:
    """What one case measured."""

    name: str
    questions: int
    runs: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    wall_s: float = 0.0
    figures: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def launch_backfill(keys: list[str]) -> str:
    stage_keys = [{"path": [PREFIX, s]} for s in STAGES]
    params = {"partitionNames": sorted(keys), "assetSelection": stage_keys, "fromFailure": False}
    launched = gql(LAUNCH, params=params)["launchPartitionBackfill"]
    if launched["__typename"] != "LaunchBackfillSuccess":
        raise SystemExit(f"backfill refused: {launched}")
    return str(launched["backfillId"])


def backfill_state(backfill_id: str) -> tuple[str, list[dict[str, str]]]:
    b = gql(BACKFILL, id=backfill_id)["partitionBackfillOrError"]
    return str(b["status"]), list(b["runs"])


def wait_backfill(backfill_id: str, timeout_s: float, settle_s: float, server: Endpoint) -> str:
    """Until the backfill ends, or nothing has moved (run statuses, LLM requests) for ``settle_s``
    (a run left STARTED by a dead host keeps a backfill open for good); bounded by ``timeout_s``."""
    end = time.monotonic() + timeout_s
    seen: tuple[object, ...] = ()
    moved = time.monotonic()
    while time.monotonic() < end:
        status, runs = backfill_state(backfill_id)
        if status in TERMINAL:
            return status
        now = (tuple(sorted((r["id"], r["status"]) for r in runs)), server.request_count)
        if now != seen:
            seen, moved = now, time.monotonic()
        elif time.monotonic() - moved > settle_s and not any(r["status"] in ("QUEUED", "STARTING") for r in runs):
            return f"{status} (settled: no change for {settle_s:.0f} s)"
        time.sleep(2)
    return f"{status} (timed out after {timeout_s:.0f} s)"


def kill_when(server: Endpoint, replies: int, victim: Host, timeout_s: float) -> set[int]:
    """SIGKILL every process of ``victim`` once the endpoint has answered ``replies`` requests; the
    requests in flight then (read once the host is gone): a reply the dead host never got or never
    stored may be asked for again, which is no reply paid twice by the pipeline."""
    wait_for(f"{replies} LLM replies", lambda: sum(1 for e in server.log if e.end is not None) >= replies,
             timeout_s, 0.05)  # fmt: skip
    at = time.time()
    victim.kill()
    time.sleep(1.0)  # the PID namespace's other processes die with its first one, not in the same instant
    return in_flight_at(server.request_log(), at)


def not_done(store: Any, keys: list[str]) -> list[str]:
    rows = store.query("SELECT stage, partition_key, status FROM progress").to_pylist()
    done = Counter(r["partition_key"] for r in rows if r["status"] == "done" and r["stage"] in STAGES)
    return [k for k in keys if done[k] < len(STAGES)]


def questions_lost(store: Any, keys: list[str]) -> int:
    """Questions with a per-question stage neither done nor failed in ``progress``."""
    rows = store.query("SELECT stage, partition_key, status FROM progress").to_pylist()
    settled = Counter(r["partition_key"] for r in rows if r["status"] in ("done", "failed") and r["stage"] in STAGES)
    return sum(1 for k in keys if settled[k] < len(STAGES))


def compute_log_seen(root: Path, run_ids: list[str], instance: Any) -> str:
    """A run executed on a worker: its captured stderr, as a file under the shared base_dir and as the
    webserver's GraphQL returns it to the UI."""
    runs = [r for r in (instance.get_run_by_id(i) for i in run_ids) if r is not None]
    for run in sorted(runs, key=lambda r: r.status.value != "SUCCESS"):  # a finished run's log first
        run_id, host = run.run_id, run.tags.get("membench/host", "?")
        if not host.startswith("mbh-w"):
            continue
        for path in sorted((root / "compute_logs" / run_id).rglob("*.err")):
            key = [*path.relative_to(root / "compute_logs").with_suffix("").parts]
            text = gql(LOGS, key=key)["capturedLogs"]["stderr"] or ""
            if path.stat().st_size and text:
                return (f"run {run_id[:8]} ran on {host}: {path.relative_to(root)} {path.stat().st_size} bytes, "
                        f"the webserver's capturedLogs returns {len(text)} characters of it")  # fmt: skip
    return "no worker run's compute log found under the shared base_dir"


@contextmanager
def case_hosts(workers: int, own_pids: bool) -> Iterator[list[Host]]:
    """The namespaces and this case's processes; everything killed and deleted after."""
    root = Path(tempfile.mkdtemp(prefix="membench-hosts-"))
    root.chmod(0o755)  # PostgreSQL runs as its own user
    (root / "logs").mkdir()
    hosts = [Host(name, root / "logs", own_pids) for name in netns_names(workers)]
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)  # this thread's namespace, to come back to
    make_network(workers)
    try:
        hub = os.open("/run/netns/mbh-hub", os.O_RDONLY)
        enter_netns(hub)
        os.close(hub)
        yield hosts
    finally:
        enter_netns(own)
        os.close(own)
        for host in reversed(hosts):
            host.kill()
        drop_network(workers)
        if os.environ.get("MEMBENCH_HOSTS_KEEP"):
            print(f"  kept {root}", flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)


def run_case(args: argparse.Namespace, workers: int, kill: bool) -> Case:
    import dagster as dg

    from assets.partition_status import status_mismatches
    from pipeline.store.results import ResultStore

    case = Case(f"{workers} worker host{'s' if workers > 1 else ''}" + (", one killed" if kill else ""), args.questions)
    server = Endpoint(args.delay)
    with case_hosts(workers, not args.shared_pids) as hosts:
        hub, root = hosts[0], hosts[0].logs.parent
        server.start()
        try:
            config, keys = write_files(root, args.questions, server.base_url, workers * args.workers)
            pg_url = start_postgres(hub, root, dict(os.environ))
            start_redis(hub, dict(os.environ))
            env = host_env(root, hub.name, config, pg_url)
            prep = hub.spawn([str(BIN / "dagster"), "job", "execute", "-j", "retrieval_benchmark"], env, "prep")
            if prep.wait(timeout=600) != 0:
                raise SystemExit(f"the preparation run failed: see {hub.logs}")
            hub.spawn([str(BIN / "dagster-daemon"), "run", "-w", str(ROOT / "workspace.yaml")], env, "daemon")
            hub.spawn([str(BIN / "dagster-webserver"), "-h", HUB_IP, "-p", str(UI_PORT), "-w",
                       str(ROOT / "workspace.yaml")], env, "webserver")  # fmt: skip
            for host in hosts[1:]:
                start_workers(host, host_env(root, host.name, config, pg_url), args.workers, args.pool,
                              args.concurrency)  # fmt: skip
            wait_for("the webserver's code location",
                     lambda: gql(ASSET, key={"path": [PREFIX, "answers"]})["assetNodeOrError"]["__typename"]
                     == "AssetNode", 300, 2)  # fmt: skip
            os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
            os.environ["MEMBENCH_PG_URL"] = pg_url
            os.environ.update({k: env[k] for k in ("MEMBENCH_CELERY_BROKER", "MEMBENCH_CELERY_BACKEND",
                                                   "MEMBENCH_COMPUTE_LOGS")})  # fmt: skip
            start = time.monotonic()
            first = launch_backfill(keys)
            excused: set[int] = set()
            if kill:
                excused = kill_when(server, int(args.kill_after * 2 * len(keys)), hosts[-1], args.timeout)
                case.notes.append(f"killed {hosts[-1].name} after {server.request_count} LLM requests")
            status = wait_backfill(first, args.timeout, args.settle, server)
            case.notes.append(f"backfill: {status}")
            store = ResultStore(results_dir=str(root / "results"))
            again = not_done(store, keys)
            backfills = [first]
            if again:
                backfills.append(launch_backfill(again))
                status = wait_backfill(backfills[-1], args.timeout, args.settle, server)
                case.notes.append(f"rerun of {len(again)} questions not done: {status}")
            case.wall_s = time.monotonic() - start
            run_ids = [r["id"] for b in backfills for r in backfill_state(b)[1]]
            with dg.DagsterInstance.get() as instance:
                runs = [instance.get_run_by_id(r) for r in run_ids]
                case.runs = Counter(str(r.status.value) for r in runs if r is not None)
                left = sum(1 for r in runs if r is not None and r.status.value in ALIVE)
                mismatches = status_mismatches(instance, PREFIX, keys, store)
                case.notes.append(compute_log_seen(root, run_ids, instance))
            log = server.request_log()
            case.requests = len(log)
            case.figures = {
                "requested twice": requested_twice(log, excused),
                "status mismatches": len(mismatches),
                "left STARTED": left,
                "questions lost": questions_lost(store, keys),
            }
            if excused:
                case.notes.append(f"{len(excused)} LLM requests in flight at the kill (not counted as twice)")
            for m in mismatches[:10]:
                case.notes.append(f"status mismatch: {m}")
        finally:
            server.stop()
    return case


def report(case: Case) -> None:
    runs = ", ".join(f"{n} {s}" for s, n in sorted(case.runs.items()))
    print(f"{case.name}: runs {sum(case.runs.values())} ({runs}); questions {case.questions}; "
          f"LLM requests {case.requests}; wall time {case.wall_s:.1f} s", flush=True)  # fmt: skip
    for note in case.notes:
        print(f"  {note}", flush=True)
    print("  " + "; ".join(f"{k} {v}" for k, v in case.figures.items()), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.3, help="seconds the LLM endpoint takes per request")
    parser.add_argument("--pool", default="solo", help="Celery worker pool (prefork fails every run)")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes per host")
    parser.add_argument("--concurrency", type=int, default=1, help="each worker's --concurrency")
    parser.add_argument("--kill-after", type=float, default=0.3, help="share of the LLM requests before the kill")
    parser.add_argument("--settle", type=float, default=150.0, help="seconds without change that end a wait")
    parser.add_argument("--timeout", type=float, default=900.0, help="longest wait for one backfill")
    parser.add_argument(
        "--shared-pids",
        action="store_true",
        help="hosts share the machine's process table (default: each its own, as machines and "
        "containers have; then every Celery worker is pid 1 of its host)",
    )
    parser.add_argument("--cases", default="1,2", help="worker hosts per case (the 2-host case kills one)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: it creates network namespaces")
    cases = [run_case(args, n, kill=n > 1) for n in (int(c) for c in args.cases.split(","))]
    for case in cases:
        report(case)
    total = {k: sum(c.figures.get(k, 0) for c in cases) for k in cases[-1].figures}
    print("; ".join(f"{k} {v}" for k, v in total.items()), flush=True)
    return 0 if not any(total.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
