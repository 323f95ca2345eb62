"""The lock files agree with pyproject.toml, and the set-up's virtualenv holds what they lock.

Why: dependencies are ranges in pyproject.toml (what a researcher's ``pip install membench``
accepts); the set-up installs configs/lock/*.txt, so the same commit installs the same numpy,
torch and bm25s tomorrow (numpy alone moves the official retriever's tie order). A lock
regenerated from an older pyproject, or edited by hand, must fail here, not in a number.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from pipeline.products.hindsight_server import SERVER_LOCK, SERVER_PACKAGE
from tests.conftest import _needs_test_setup
from tests.support.lock import (
    LOCK_DIR,
    PYPROJECT,
    LockFile,
    disagreements,
    normalize,
    pyproject_digest,
    read_lock,
    requirements,
)
from tests.support.paths import PROJECT_ROOT

EXTRAS = ("mem0", "langmem", "graphiti", "mcp")
LOCKS = {  # lock file -> the extras it installs beside the core
    "core": (),
    **{e: (e,) for e in EXTRAS},
    "all": (*EXTRAS, "hindsight"),
    "test": (*EXTRAS, "hindsight", "dev"),
}


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_lock_is_current_with_pyproject(name: str) -> None:
    assert disagreements(read_lock(LOCK_DIR / f"{name}.txt"), LOCKS[name]) == []


def test_a_lock_that_disagrees_with_pyproject_fails(tmp_path: Path) -> None:
    """A dependency edited in pyproject.toml without `bash scripts/lock.sh`: the check names the lock and the pin."""
    changed = tmp_path / "pyproject.toml"
    changed.write_text(PYPROJECT.read_text().replace('"numpy>=1.26"', '"numpy>=99"'))
    found = disagreements(read_lock(LOCK_DIR / "core.txt"), (), changed)
    assert found[0] == "core.txt was generated from another pyproject.toml: run `bash scripts/lock.sh`"
    assert [f for f in found[1:] if f.startswith("core.txt: numpy>=99 (locked: ")] == found[1:] != []
    unhashed = tmp_path / "core.txt"
    unhashed.write_text(re.sub(r"(?m)^duckdb==(\S+) \\\n(    --hash=\S+( \\)?\n)+", r"duckdb==\1\n",
                               (LOCK_DIR / "core.txt").read_text()))  # fmt: skip
    assert disagreements(read_lock(unhashed), ()) == ["core.txt: duckdb has no hash"]


def test_a_changed_dependency_changes_the_digest(tmp_path: Path) -> None:
    changed = tmp_path / "pyproject.toml"
    changed.write_text(PYPROJECT.read_text().replace('"numpy>=1.26"', '"numpy>=1.27"'))
    assert changed.read_text() != PYPROJECT.read_text()
    assert pyproject_digest(changed) != pyproject_digest()
    commented = tmp_path / "commented.toml"
    commented.write_text(PYPROJECT.read_text().replace("[project]\n", "[project]\n# a comment\n"))
    assert pyproject_digest(commented) == pyproject_digest()  # formatting is not a dependency


@pytest.mark.parametrize("name", sorted(set(LOCKS) - {"core"}))
def test_every_lock_keeps_the_core_versions(name: str) -> None:
    """Each file is resolved under core.txt's pins: a library has one version whatever the extras."""
    core, other = read_lock(LOCK_DIR / "core.txt"), read_lock(LOCK_DIR / f"{name}.txt")
    moved = {n: (v, other.pins.get(n)) for n, v in core.pins.items() if other.pins.get(n) != v}
    assert moved == {}


def test_the_test_runner_lock_is_test_txts() -> None:
    """pytest.txt (installed by every set-up, so that the test command can start) pins what test.txt pins:
    the test command's own set-up (test.txt) then moves nothing under the running pytest."""
    runner, test = read_lock(LOCK_DIR / "pytest.txt"), read_lock(LOCK_DIR / "test.txt")
    assert runner.digest == pyproject_digest() and runner.unhashed == []
    dev = [r for r in requirements(("dev",)) if normalize(r.name) == "pytest"]
    assert dev and all(r.specifier.contains(runner.pins["pytest"]) for r in dev)
    assert {n: test.pins.get(n) for n in runner.pins} == runner.pins


def test_the_cpu_build_of_torch_is_locked() -> None:
    assert read_lock(LOCK_DIR / "core.txt").pins["torch"] == "2.13.0+cpu"


def test_hindsight_server_lock_pins_the_server_membench_starts() -> None:
    lock = read_lock(PROJECT_ROOT / SERVER_LOCK)
    package = Requirement(SERVER_PACKAGE)
    assert package.specifier.contains(lock.pins[normalize(package.name)])
    assert lock.unhashed == [] and "protobuf" in lock.pins


def _installed_locks() -> list[LockFile]:
    marker = Path(sys.prefix) / "membench-locks"
    if not marker.is_file():
        pytest.skip(f"{sys.prefix} was not made by scripts/setup.sh (no {marker.name})")
    return [read_lock(LOCK_DIR / f"{name}.txt") for name in marker.read_text().split()]


def test_the_setup_installed_the_locked_versions() -> None:
    """Every library the set-up's last locked install named is at its locked version in this venv."""
    wrong = {}
    for lock in _installed_locks():
        for name, version in lock.pins.items():
            try:
                got = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                got = None
            if got != version:
                wrong[name] = (version, got)
    assert wrong == {}, f"installed versions differ from the lock (locked, installed): {wrong}"


def test_the_test_command_installs_what_only_tests_use_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/conftest.py runs `scripts/setup.sh --tests` in the checkout's own set-up venv when it lacks it; a
    virtualenv the set-up did not make (a shared one, one's own) is never touched."""
    venv = tmp_path / ".venv"
    venv.mkdir()
    monkeypatch.setattr(sys, "prefix", str(venv))
    assert not _needs_test_setup(tmp_path)  # no membench-locks: not made by scripts/setup.sh
    (venv / "membench-locks").write_text("core\npytest\n")  # README command (1)'s set-up
    assert _needs_test_setup(tmp_path)
    (venv / "membench-locks").write_text("test\n")
    assert not _needs_test_setup(tmp_path)
    (venv / "membench-locks").write_text("core\npytest\n")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "elsewhere"))
    assert not _needs_test_setup(tmp_path)
