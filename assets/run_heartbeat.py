"""Each live run's claim and heartbeat in the shared results folder.

Why in the folder: a run's process tags (assets/layout.py) tell whether it is alive only to a
process on its own host, and only runs of the asking Dagster instance are seen at all. A worker
host that dies left its run STARTED for good, refusing its questions to every rerun; two Dagster
homes on one results folder both ran one config and sent LLM requests twice (issue 38). The
results folder is what every host and every instance of a deployment share, so each run that
claimed questions keeps a file there: ``<results>/.run_heartbeats/<run id>.json`` names its config,
questions, host, process and Dagster home, and its modification time is its heartbeat, renewed every
``BEAT_S`` by a thread of the process running the run's step. A heartbeat older than the stale
limit (``$MEMBENCH_RUN_STALE_S``, 120 s) is a dead run; the file is removed once the run has ended
(by its thread, or by the run that reaps it when it died).

Hosts compare a file's time with their own clock: the hosts of a deployment keep their clocks
synchronised (NTP), as a shared filesystem needs anyway. A step's thread stops beating when its run
has ended (in-process runs live on in their process) or its process exits; between two steps of a
run (a new step process starting: seconds, tens of seconds on a loaded host) the heartbeat pauses,
under the stale limit.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pipeline.config.entry_errors import in_dagster_run_command

HEARTBEAT_DIR = ".run_heartbeats"
BEAT_S = 5.0
STALE_ENV = "MEMBENCH_RUN_STALE_S"
DEFAULT_STALE_S = 120.0  # over the pause between two steps: a step process starting on a loaded host
MAX_ERRORS = 12  # beats in a row whose instance could not tell the run's status: stop beating
MAX_BEATS = 10_000_000  # a bound on the beat loop (~1.5 years at BEAT_S); a run ends long before


def stale_after_s() -> float:
    """Seconds without a heartbeat after which a run is dead (``$MEMBENCH_RUN_STALE_S``, default 120)."""
    raw = os.environ.get(STALE_ENV, "")
    try:
        return float(raw) if raw else DEFAULT_STALE_S
    except ValueError as exc:
        raise ValueError(f"${STALE_ENV} must be a number of seconds, got {raw!r}") from exc


@dataclass(frozen=True)
class Claim:
    """What a run claimed: its config and questions (its partition tags), and where it runs."""

    run_id: str
    config: str
    host: str
    pid: str
    pid_started: str  # the process's start time: a reused pid is another process
    dagster_home: str
    tags: Mapping[str, str]  # the run's partition tags: which questions it covers

    def describe(self) -> str:
        """How a refusal names the holder: it may be a run of another host or another Dagster instance."""
        return f"{self.run_id} (pid {self.pid} on {self.host}, Dagster home {self.dagster_home or 'unset'})"


def heartbeat_path(results: Path, run_id: str) -> Path:
    return results / HEARTBEAT_DIR / f"{run_id}.json"


def write_claim(path: Path, claim: Claim) -> None:
    """Write the claim whole (a reader never sees half of it); its modification time is a first beat."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "run_id": claim.run_id,
        "config": claim.config,
        "host": claim.host,
        "pid": claim.pid,
        "pid_started": claim.pid_started,
        "dagster_home": claim.dagster_home,
        "tags": dict(claim.tags),
    }
    tmp = path.with_name(f".{path.name}.{socket.gethostname()}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body, sort_keys=True))
    os.replace(tmp, path)


def read_claim(path: Path) -> Claim | None:
    """The claim in ``path``; None when it is gone or unreadable (a run ending removes it)."""
    try:
        body = json.loads(path.read_text())
        return Claim(
            run_id=str(body["run_id"]),
            config=str(body["config"]),
            host=str(body["host"]),
            pid=str(body["pid"]),
            pid_started=str(body.get("pid_started", "")),
            dagster_home=str(body.get("dagster_home", "")),
            tags={str(k): str(v) for k, v in body.get("tags", {}).items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def heartbeat_age_s(path: Path) -> float | None:
    """Seconds since the run in ``path`` last beat; None when it has no heartbeat file."""
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return None


def heartbeat_stopped(path: str | Path | None) -> bool:
    """Whether the run whose heartbeat file is ``path`` is dead: its file has not beaten for too long.

    A missing file is not known dead (False): the run has not claimed yet, or it ended and its
    thread removed the file after its status turned final, so nothing reaps a run that succeeded.
    """
    if not path:
        return False
    limit = stale_after_s()  # a bad setting fails here, whether or not the file exists
    age = heartbeat_age_s(Path(path))
    return age is not None and age > limit


def claims(results: Path) -> list[tuple[Path, Claim]]:
    """Every readable claim of the results folder, with its file."""
    folder = results / HEARTBEAT_DIR
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        claim = read_claim(path)
        if claim is not None:
            found.append((path, claim))
    return found


class _Beats:
    """One beating thread per (process, run): every step of a run in this process shares it."""

    lock: ClassVar[threading.Lock] = threading.Lock()
    running: ClassVar[dict[str, threading.Thread]] = {}


def start_heartbeat(path: Path, run_id: str, run_ended: Callable[[], bool]) -> None:
    """Renew ``path`` every BEAT_S from this process until ``run_ended()`` or the process exits.

    The thread removes the file once the run's status is final, so a finished run holds nothing,
    and never before: a run between its last step and its final status must not look dead.
    """
    with _Beats.lock:
        thread = _Beats.running.get(run_id)
        if thread is not None and thread.is_alive():
            return
        thread = threading.Thread(
            target=_beat, args=(path, run_id, run_ended), name=f"membench-heartbeat-{run_id[:8]}", daemon=True
        )
        first = run_id not in _Beats.running
        _Beats.running[run_id] = thread
        thread.start()
    if first and in_dagster_run_command():  # the run lives in this very process
        atexit.register(_release_at_exit, path, run_ended)


def _release_at_exit(path: Path, run_ended: Callable[[], bool]) -> None:
    """An in-process run's process (``dagster job execute``) exits right after the run's status turns
    final, before its thread's next beat: remove the claim then, or it would read alive for a while."""
    if _ended(run_ended):
        path.unlink(missing_ok=True)


def _beat(path: Path, run_id: str, run_ended: Callable[[], bool]) -> None:
    errors = 0
    try:
        for _ in range(MAX_BEATS):
            time.sleep(BEAT_S)
            ended = _ended(run_ended)
            errors = 0 if ended is not None else errors + 1
            if ended:
                path.unlink(missing_ok=True)
                return
            if errors >= MAX_ERRORS:  # the instance is gone (a test's instance disposed): leave the file to go stale
                return
            try:
                os.utime(path)
            except FileNotFoundError:  # removed by a reaper: nothing left to renew
                return
    finally:
        with _Beats.lock:
            if _Beats.running.get(run_id) is threading.current_thread():
                del _Beats.running[run_id]


def _ended(run_ended: Callable[[], bool]) -> bool | None:
    """Whether the run ended; None when its instance cannot say (unreachable for a moment: ask again)."""
    try:
        return run_ended()
    except Exception:
        return None
