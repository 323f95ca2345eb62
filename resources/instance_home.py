"""Create a Dagster home's instance storage once, before any run (scripts/dagster_home.sh runs this).

Why: Dagster creates its SQLite files (``history/runs.db``, the event index
``history/runs/index.db``, ``schedules/schedules.db``) when a process first opens the instance.
On a fresh home the first two runs (or ``dagster dev`` and a run) did that at once and both
stamped the schema revision: ``runs.db`` with two alembic heads in 4 of 30 fresh homes, after which
every command on that home failed with a long traceback and the partition status was lost. The
storage class now serialises that creation (resources/event_log.py), and the set-up creates the
files here, so no run ever does.

Run again on an existing home it checks every SQLite file for exactly one schema revision: a file
that race left with two (Dagster's head and an older one) is repaired by keeping the head, so the
home keeps its runs and partition status; any other mismatch is reported in one line naming the
file, exit status 1.

    python -m resources.instance_home .dagster_home
"""

from __future__ import annotations

import inspect
import os
import sqlite3
import sys
from pathlib import Path

import dagster as dg
from alembic.script import ScriptDirectory

from resources.dagster_internals import SqliteEventLogStorage, get_alembic_config

REVISIONS_TABLE = "alembic_version"  # Dagster's SQLite files record their schema revision here


class BrokenHome(RuntimeError):
    """A SQLite file of the home records schema revisions that are not Dagster's head: not repairable here."""


def schema_revisions(db: Path) -> list[str] | None:
    """The schema revisions ``db`` records (one row each), or None when it has no revision table."""
    con = sqlite3.connect(db)
    try:
        has = con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [REVISIONS_TABLE])
        if has.fetchone() is None:
            return None
        return [str(r[0]) for r in con.execute(f"SELECT version_num FROM {REVISIONS_TABLE}")]
    finally:
        con.close()


def head_revision() -> str:
    """The schema revision Dagster stamps on the files it creates (its alembic head)."""
    scripts = ScriptDirectory.from_config(get_alembic_config(inspect.getfile(SqliteEventLogStorage)))
    head = scripts.get_current_head()
    if head is None:
        raise BrokenHome("Dagster's schema scripts name no head revision")
    return head


def _keep_only(db: Path, revision: str) -> None:
    con = sqlite3.connect(db)
    try:
        with con:
            con.execute(f"DELETE FROM {REVISIONS_TABLE} WHERE version_num <> ?", [revision])
    finally:
        con.close()


def check_revisions(home: Path) -> list[Path]:
    """Every SQLite file of ``home`` with a schema revision table, each left with one revision.

    A file that records Dagster's head and other revisions is what the start-up race left (both
    processes stamped: the head, and the older revision Dagster stamps on tables it did not create);
    its tables were created at the head schema, so the head is kept. Raises BrokenHome otherwise.
    """
    found = []
    head: str | None = None
    for db in sorted(home.rglob("*.db")):
        revisions = schema_revisions(db)
        if revisions is None:
            continue
        if len(revisions) > 1:
            head = head or head_revision()
            if head not in revisions:
                raise BrokenHome(
                    f"{db} records {len(revisions)} schema revisions {sorted(revisions)}, none of them "
                    f"Dagster's current one ({head}): Dagster cannot open this home; move it aside and run the "
                    "set-up again"
                )
            _keep_only(db, head)
        found.append(db)
    return found


def create_storage(home: Path) -> list[Path]:
    """Open the instance of ``home`` (its dagster.yaml) once, which creates its storage, then check it.

    Returns the SQLite files that hold a schema revision (none for a PostgreSQL instance).
    """
    check_revisions(home)  # a home the race broke must be repaired before Dagster can open it
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        instance.get_runs(limit=1)  # every storage is built by now; this only proves it answers
    finally:
        instance.dispose()
    return check_revisions(home)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m resources.instance_home DAGSTER_HOME_FOLDER\n")
        return 2
    home = Path(args[0]).resolve()
    os.environ["DAGSTER_HOME"] = str(home)  # configs/dagster.yaml reads its base_dir from it
    try:
        files = create_storage(home)
    except BrokenHome as exc:
        sys.stderr.write(f"setup: {exc}\n")
        return 1
    names = ", ".join(str(f.relative_to(home)) for f in files) or "no SQLite files (not SQLite storage)"
    sys.stdout.write(f"Dagster instance storage ready in {home}: {names}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
