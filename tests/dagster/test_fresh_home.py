"""A fresh Dagster home is never broken by its first runs: the set-up creates its storage once, and
processes that open a fresh home at once create it one after the other.

Counted, not timed: the schema revisions each SQLite file of a home records (Dagster fails on
every command once ``history/runs.db`` records two), over homes prepared by the set-up's own
script (scripts/dagster_home.sh) and over bare homes opened by two threads at once.
"""

from __future__ import annotations

import sqlite3
import subprocess
import threading
from pathlib import Path

import dagster as dg
import pytest
import yaml

from resources.instance_home import schema_revisions
from tests.support.paths import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "dagster_home.sh"
STORAGE_FILES = ("history/runs.db", "history/runs/index.db", "schedules/schedules.db")


def _membench_yaml(home: Path) -> None:
    """configs/dagster.yaml with its storage's base dir written out (threads share one DAGSTER_HOME)."""
    cfg = yaml.safe_load((PROJECT_ROOT / "configs" / "dagster.yaml").read_text())
    cfg["storage"]["custom"]["config"]["base_dir"] = str(home)
    (home / "dagster.yaml").write_text(yaml.safe_dump(cfg))


def _set_up(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), str(home)], capture_output=True, text=True, timeout=300)


def _revisions(home: Path) -> dict[str, list[str] | None]:
    return {name: schema_revisions(home / name) if (home / name).exists() else None for name in STORAGE_FILES}


def test_set_up_creates_the_instance_storage_before_any_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = _set_up(home)
    assert proc.returncode == 0, proc.stderr
    assert (home / "dagster.yaml").exists()
    revisions = _revisions(home)
    assert all(r is not None and len(r) == 1 for r in revisions.values()), revisions
    assert proc.stdout.startswith(f"Dagster instance storage ready in {home}")
    again = _set_up(home)  # idempotent: the same files, still one revision each
    assert again.returncode == 0, again.stderr
    assert _revisions(home) == revisions


def _open_at_once(home: Path) -> list[str]:
    """Open the instance of ``home`` from two threads at once (as two first runs do); their errors."""
    start = threading.Barrier(2)
    errors: list[str] = []

    def first_run() -> None:
        start.wait()
        try:
            dg.DagsterInstance.from_config(str(home)).dispose()
        except Exception as exc:  # a table created twice: the race itself
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=first_run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def test_bare_homes_opened_by_two_at_once_keep_one_revision_per_file(tmp_path: Path) -> None:
    broken: list[str] = []
    for i in range(8):
        home = tmp_path / f"home{i}"
        home.mkdir()
        _membench_yaml(home)
        errors = _open_at_once(home)
        revisions = _revisions(home)
        if errors or any(r is None or len(r) != 1 for r in revisions.values()):
            broken.append(f"{home.name}: {revisions} {errors}")
    assert broken == []


def _raced_home(tmp_path: Path) -> Path:
    """A home that Dagster's own SQLite storage (no lock) left with two revisions in runs.db."""
    for i in range(30):
        home = tmp_path / f"raced{i}"
        home.mkdir()
        (home / "dagster.yaml").write_text(f"storage:\n  sqlite:\n    base_dir: {home}\ntelemetry:\n  enabled: false\n")
        _open_at_once(home)
        if len(schema_revisions(home / "history" / "runs.db") or []) > 1:
            return home
    raise AssertionError("the stock storage never raced in 30 fresh homes")


def test_set_up_repairs_a_home_the_race_broke_and_names_a_file_it_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _raced_home(tmp_path)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    runs = home / "history" / "runs.db"
    assert len(set(schema_revisions(runs) or [])) == 2
    repaired = _set_up(home)
    assert repaired.returncode == 0, repaired.stderr
    assert all(r is not None and len(r) == 1 for r in _revisions(home).values()), _revisions(home)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_runs() == []
    with sqlite3.connect(runs) as con:
        con.execute("DELETE FROM alembic_version")
        con.executemany("INSERT INTO alembic_version VALUES (?)", [("0000deadbeef",), ("0000cafebabe",)])
    refused = _set_up(home)
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1 and str(runs) in refused.stderr and "move it aside" in refused.stderr
