"""membench as a researcher installs it: the wheel built from this tree, in a fresh virtualenv outside
the clone, the core only (from configs/lock/core.txt), ``membench init`` in an empty temporary folder,
and there, as typed: ``dagster job execute -j full_benchmark``, ``membench results``, ``dagster dev``.

Why one test for all of it: each step needs the one before (the wheel, the venv, the project), and
what it guards is the sum: the wheel carries what a project needs (configs, samples, the Dagster
entry), a project outside the clone resolves its config, results and Dagster home in its own
folder, the core runs the sample job with no extra installed and without a WARNING, and a config
naming a product says which extra to install. The install needs PyPI as the set-up does (the pip
cache the set-up filled makes it a copy); nothing is written outside the test's temporary folder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.support.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow

INSTALL_TIMEOUT_S = 1200
RUN_TIMEOUT_S = 1200
DEV_TIMEOUT_S = 300
LOCATION_QUERY = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus " \
    "locationOrLoadError { __typename ... on PythonError { message } } } } } }"  # fmt: skip


def _sh(script: str, env: dict[str, str], cwd: Path, timeout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _clean_env(home: Path) -> dict[str, str]:
    """A shell as a researcher opens it: none of the clone's settings (DAGSTER_*, MEMBENCH_*, PYTHONPATH)."""
    keep = {"LANG", "LC_ALL", "TERM", "TMPDIR", "CI", "PIP_FIND_LINKS", "PIP_CERT", "PIP_DEFAULT_TIMEOUT"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    clone_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != clone_bin)
    env["HOME"] = os.environ.get("HOME", str(home))
    return env


def _source_copy(dst: Path) -> Path:
    """The tracked files of this tree (a build writes build/ and *.egg-info beside its source)."""
    listing = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]  # tracked, or new and not ignored
    files = subprocess.run(listing, cwd=PROJECT_ROOT, capture_output=True, check=True, timeout=60)
    for name in files.stdout.decode().split("\0"):
        if name and (PROJECT_ROOT / name).is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(PROJECT_ROOT / name, dst / name)
    return dst


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The wheel, built here, installed into a fresh venv with the core's locked dependencies."""
    tmp = tmp_path_factory.mktemp("installed")
    src = _source_copy(tmp / "src")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(src)],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    [wheel] = (tmp / "dist").glob("membench-*.whl")
    venv = tmp / "venv"
    env = _clean_env(tmp)
    base = getattr(sys, "_base_executable", sys.executable)
    install = (
        f"{base} -m venv {venv} && {venv}/bin/python -m pip install --quiet --no-compile --require-hashes "
        f"-r {src}/configs/lock/core.txt && {venv}/bin/python -m pip install --quiet --no-deps {wheel}"
    )
    done = _sh(install, env, tmp, INSTALL_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"tmp": tmp, "wheel": wheel, "venv": venv}


def test_the_wheel_carries_what_a_project_needs(installed: dict[str, Path]) -> None:
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    needed = {
        "configs/sample.yaml", "configs/prices.yaml", "configs/dagster.yaml", "configs/lock/core.txt",
        "configs/lock/hindsight-server.txt", "pipeline/sample_data/locomo_sample.json", "pipeline/definitions.py",
        "pipeline/agentic/mcp/npm/package-lock.json", "resources/event_log.py", "assets/canonical.py",
    }  # fmt: skip
    assert needed <= names, sorted(needed - names)
    assert not [n for n in names if n.startswith("tests/") or "node_modules" in n]
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(installed["wheel"]).read(metadata).decode()
    extras = {line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Provides-Extra: ")}
    assert {"mem0", "langmem", "graphiti", "hindsight", "mcp", "all"} <= extras
    assert 'Requires-Dist: mem0ai==2.2.1; extra == "mem0"' in text
    assert not [line for line in text.splitlines() if line.startswith("Requires-Dist: mem0ai") and "extra" not in line]


def _project(installed: dict[str, Path]) -> tuple[Path, dict[str, str], str]:
    project = installed["tmp"] / "empty" / "mybench"
    project.parent.mkdir(exist_ok=True)
    env = _clean_env(installed["tmp"])
    activate = f"source {installed['venv']}/bin/activate"
    if not project.exists():
        done = _sh(f"{activate} && membench init {project}", env, installed["tmp"], 120)
        assert done.returncode == 0, done.stderr
        assert f"added to {installed['venv']}/bin/activate" in done.stdout
    return project, env, activate


def test_init_then_the_sample_job_as_typed(installed: dict[str, Path]) -> None:
    project, env, activate = _project(installed)
    run = _sh(f"{activate} && dagster job execute -j full_benchmark && membench results", env, project, RUN_TIMEOUT_S)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-4000:]
    results = project / "results" / "sample"
    assert (results / "report.html").is_file() and str(results / "report.html") in run.stdout
    assert " - WARNING - " not in log, [line for line in log.splitlines() if " - WARNING - " in line]
    assert "no LLM judge (the config has no 'llm:' block)" in log
    manifest = json.loads((results / "manifest.json").read_text())
    assert manifest["code"]["package_version"] and manifest["code"]["git_commit"] is None
    assert manifest["libraries"]["torch"] == "2.13.0+cpu" and "mem0ai" not in manifest["libraries"]  # the core
    home = project / ".dagster_home"
    assert (home / "dagster.yaml").is_file() and any(p.name != "dagster.yaml" for p in home.iterdir())


def test_a_product_config_names_the_extra_to_install(installed: dict[str, Path]) -> None:
    project, env, activate = _project(installed)
    sample = yaml.safe_load((project / "configs" / "sample.yaml").read_text())
    config = project / "configs" / "mem0.yaml"
    config.write_text(yaml.safe_dump({
        "datasets": sample["datasets"][:1], "memory_systems": [{"name": "mem0", "kind": "mem0"}],
        "llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
    }))  # fmt: skip
    done = _sh(f"{activate} && membench check-config configs/mem0.yaml", env, project, 300)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "needs the extra membench[mem0]" in done.stderr and "run `pip install 'membench[mem0]'`" in done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_dagster_dev_loads_the_project(installed: dict[str, Path]) -> None:
    project, env, activate = _project(installed)
    port = _free_port()
    proc = subprocess.Popen(
        ["bash", "-c", f"{activate} && exec dagster dev -p {port}"], cwd=project, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    entries: list[dict] = []
    try:
        deadline = time.monotonic() + DEV_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": LOCATION_QUERY}).encode(),
                    headers={"Content-Type": "application/json"},
                )  # fmt: skip
                with urllib.request.urlopen(request, timeout=10) as reply:
                    entries = json.load(reply)["data"]["workspaceOrError"]["locationEntries"]
            except (OSError, KeyError, TypeError, ValueError):
                entries = []
            if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                break
            time.sleep(2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert [(e["name"], e["locationOrLoadError"]["__typename"]) for e in entries] == [
        ("pipeline.definitions", "RepositoryLocation")
    ], entries
    assert not list(project.glob(".tmp_dagster_home_*"))  # the project's Dagster home, not a throw-away one
