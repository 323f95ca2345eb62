"""Dagster instance storage for one machine: SQLite that writes a batch of asset events at once.

Why: per-question partition status costs one event per asset and partition (a planned event per
asset x question when a range run starts, a materialization per question when a stage's output is
stored). Dagster's SQLite event log stores each event on its own: a new SQLAlchemy engine and two
transactions (the run's shard, then the cross-run index shard) per event, ~7-8 ms each on this
machine, 10.6 s of planned events before the first step of a 230-question run. Dagster already
groups those events into batches (``DagsterEventBatchMetadata``) when ``DAGSTER_EVENT_BATCH_SIZE``
is set, but SQLite's ``store_event_batch`` then stores them one by one anyway.

:class:`BatchingSqliteEventLogStorage` stores a batch of asset events of one run with the same
statements, in the same order, as ``SqliteEventLogStorage.store_event`` would, in one transaction
on the run shard and one on the index shard; other events in a batch (asset-check planned events)
are stored one at a time in their place.
:class:`MembenchSqliteStorage` is Dagster's SQLite storage (same directories under the base dir,
so an existing ``.dagster_home`` keeps its history) with that event log, and turns Dagster's
batching on for the processes that load it (``DAGSTER_EVENT_BATCH_SIZE``, unless already set;
``0`` turns it off). configs/dagster.yaml selects it as ``storage: custom``.
Pinned to the Dagster version in pyproject.toml (internal storage API, imported through
resources/dagster_internals.py; docs/design/dagster_upgrade.md); tests/dagster/test_event_log.py
compares its stored events and partition status with the stock storage.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from dagster import DagsterEventType, EventLogEntry
from sqlalchemy.pool import NullPool, QueuePool

from pipeline.util.filelock import file_lock
from resources.dagster_internals import (
    ASSET_EVENTS,
    ConfigurableClassData,
    DagsterSqliteStorage,
    SqlEventLogStorageTable,
    SqliteEventLogStorage,
    event_logs_directory,
)

BATCH_SIZE_ENV = "DAGSTER_EVENT_BATCH_SIZE"
DEFAULT_BATCH_SIZE = "1000"
INDEX_SHARD = "index"  # Dagster's name for the cross-run shard (``INDEX_SHARD_NAME``)
BUSY_TIMEOUT_S = 30  # as Dagster's SQLite storages wait for a lock held by another process
STORAGE_LOCK = ".storage.lock"  # in the instance's base dir: held while its SQLite files are created


def _commit_without_fsync(dbapi_conn: Any, _record: Any) -> None:
    """WAL commits that the OS writes out (``synchronous=NORMAL``) instead of one fsync per commit.

    Why: an unchanged rerun of the sample commits ~480 times, each an fsync (~4 ms on this disk,
    ~10 ms under load). In WAL mode with NORMAL a commit survives the process being killed (it is in
    the OS's page cache); a power loss may drop the last commits, never corrupts the file, and the
    checkpoints still sync. Dagster's shards are always in WAL mode (``_initdb`` sets it).
    """
    dbapi_conn.execute("PRAGMA synchronous=NORMAL")


def _is_asset_event(event: EventLogEntry) -> bool:
    """An event ``store_event`` writes to the run shard and mirrors as an asset event in the index."""
    return (
        event.is_dagster_event
        and event.dagster_event_type in ASSET_EVENTS
        and event.get_dagster_event().asset_key is not None
    )


def _segments(events: Sequence[EventLogEntry]) -> list[tuple[bool, list[EventLogEntry]]]:
    """Consecutive runs of (asset events of one run) and of other events, in order."""
    out: list[tuple[bool, list[EventLogEntry]]] = []
    for event in events:
        batched = _is_asset_event(event)
        if out and out[-1][0] == batched and (not batched or out[-1][1][0].run_id == event.run_id):
            out[-1][1].append(event)
        else:
            out.append((batched, [event]))
    return out


# asset_keys columns each event type sets (``SqlEventLogStorage._get_asset_entry_values``; the
# timestamp only with the index columns, counted here as always set, which never drops an update)
_ASSET_KEY_COLUMNS: dict[DagsterEventType, frozenset[str]] = {
    DagsterEventType.ASSET_MATERIALIZATION: frozenset({"last_materialization", "last_run_id", "timestamp"}),
    DagsterEventType.ASSET_MATERIALIZATION_PLANNED: frozenset({"last_run_id", "timestamp"}),
    DagsterEventType.ASSET_OBSERVATION: frozenset({"timestamp"}),
}


def _last_writers(events: Sequence[EventLogEntry], event_ids: Sequence[int]) -> list[tuple[EventLogEntry, int]]:
    """The (event, id) pairs, in order, whose asset_keys update is not entirely overwritten by a
    later event of the batch on the same asset key.

    Why: ``_store_asset_event`` rewrites the asset's row (a serialized copy of the event, an
    insert that fails then an update) for every event; for a stage's 2,984 materializations of
    one asset only the last one's values remain. Applying just the updates whose columns no later
    event overwrites, in order, leaves the same row. An event type not listed is always applied.
    """
    covered: dict[str, set[str]] = {}
    keep: list[tuple[EventLogEntry, int]] = []
    for event, event_id in zip(reversed(events), reversed(event_ids), strict=True):
        asset = event.get_dagster_event().asset_key
        columns = _ASSET_KEY_COLUMNS.get(event.get_dagster_event().event_type)
        done = covered.setdefault(asset.to_string() if asset else "", set())
        if columns is None or not columns <= done:
            keep.append((event, event_id))
            done |= columns or set()
    return keep[::-1]


class _IdsNotConsecutiveError(Exception):
    """A batch's index rows did not get one range of ids (never seen; handled by a rollback)."""


def _inserted_ids(conn: sa.Connection, insert: sa.Insert, rows: list[dict[str, Any]]) -> list[int]:
    """Insert ``rows`` into ``event_logs`` with one ``executemany``; their ids, in order.

    Raises ``_IdsNotConsecutiveError`` unless exactly the ``len(rows)`` ids ending at
    ``last_insert_rowid()`` are those rows (same run, in the same order), checked on the primary key.
    """
    conn.execute(insert, rows)
    last = conn.exec_driver_sql("SELECT last_insert_rowid()").scalar_one()
    first = last - len(rows) + 1
    table = SqlEventLogStorageTable
    stored = conn.execute(sa.select(table.c.id, table.c.run_id).where(table.c.id >= first).order_by(table.c.id)).all()
    if [i for i, _ in stored] != list(range(first, last + 1)) or any(r != rows[0]["run_id"] for _, r in stored):
        raise _IdsNotConsecutiveError(f"index rows {first}..{last}: {len(stored)} found")
    return list(range(first, last + 1))


class BatchingSqliteEventLogStorage(SqliteEventLogStorage):
    """SQLite event log whose ``store_event_batch`` uses one transaction per shard, on connections
    that commit without an fsync each and an index shard connection kept open."""

    def _shard_engine(self, shard: str) -> sa.Engine:
        """This process's engine for ``shard``, created (and the shard initialised) once.

        Why: Dagster's ``_connect`` creates and disposes an engine for every connection (~420 per
        unchanged sample rerun, 250 of them on the index shard). The index shard's connection is
        kept open (a pool of one; ``_db_lock`` already serialises every use, across threads); a run
        shard's is still opened and closed each time (``NullPool``), because closing the last
        connection checkpoints the WAL into ``<run_id>.db``, the file whose modification the UI's
        live run log watches (``SqliteEventLogStorageWatchdog``).
        """
        engines: dict[str, sa.Engine] = self.__dict__.setdefault("_shard_engines", {})
        engine = engines.get(shard)
        if engine is None:
            kept = shard == INDEX_SHARD
            pool: dict[str, Any] = {"poolclass": QueuePool, "pool_size": 1, "max_overflow": 0} if kept else {}
            engine = sa.create_engine(
                self.conn_string_for_shard(shard),
                connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False},
                **(pool or {"poolclass": NullPool}),
            )
            sa.event.listen(engine, "connect", _commit_without_fsync)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            if shard != INDEX_SHARD:  # run shards are many: only the current one is worth keeping
                for old in [k for k in engines if k != INDEX_SHARD]:
                    engines.pop(old).dispose()
            engines[shard] = engine
        return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[sa.Connection]:
        """One transaction on ``shard`` (as Dagster's), on this process's engine for it."""
        with self._db_lock, self._shard_engine(shard).connect() as conn, conn.begin():
            yield conn

    def _dispose_engines(self) -> None:
        for engine in self.__dict__.pop("_shard_engines", {}).values():
            engine.dispose()

    def wipe(self) -> None:
        """Dagster's wipe (it deletes run shard files) after closing this process's connections."""
        with self._db_lock:
            self._dispose_engines()
        super().wipe()

    def dispose(self) -> None:
        super().dispose()
        with self._db_lock:
            self._dispose_engines()

    def has_table(self, table_name: str) -> bool:
        """Whether the index shard has ``table_name``; a table found is remembered.

        Why: Dagster asks before storing each asset event's tags, and the SQLite storage answers
        by opening a new engine and connection every time: 14 % of an unchanged rerun of
        configs/shared.yaml (11,936 partition materializations). Tables are only ever added (by
        migrations), so a positive answer stays true; a negative one is asked again.
        """
        known: set[str] = self.__dict__.setdefault("_tables_present", set())
        if table_name in known:
            return True
        present = super().has_table(table_name)
        if present:
            known.add(table_name)
        return present

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """Store ``events`` in order as ``store_event`` would, each run of asset events at once.

        A run's planned events mix asset events with asset-check planned events; those (and any
        other event) go through ``store_event`` one by one, in their place in the sequence.
        """
        for batched, segment in _segments(events):
            if batched:
                self._store_asset_events(segment)
            else:
                for event in segment:
                    self.store_event(event)

    def _store_asset_events(self, events: Sequence[EventLogEntry]) -> None:
        """Asset events of one run: one transaction on the run shard, one on the index shard.

        The rows are those ``prepare_insert_event`` inserts (``_event_to_row``: each event serialized
        once), inserted as one ``executemany`` of one compiled INSERT per shard, in order. Why not a
        statement per event: building and compiling an INSERT with its values (SQLAlchemy's cache
        key over every bound value) cost about as much as serializing the event, for each of the
        ~16,000 asset events of a 2,000-question LLM run (planned events, each stage's
        materializations). The index shard's ids come back in the events' order
        (``sort_by_parameter_order``), for the tags and the asset rows that point at them.
        """
        rows = [self._event_to_row(event) for event in events]
        insert = SqlEventLogStorageTable.insert()
        with self.run_connection(events[0].run_id) as conn:
            conn.execute(insert, rows)
        try:
            self._index_asset_events(events, rows, returning=False)
        except _IdsNotConsecutiveError:  # rolled back: the ids one by one instead
            self._index_asset_events(events, rows, returning=True)

    def _index_asset_events(
        self, events: Sequence[EventLogEntry], rows: list[dict[str, Any]], *, returning: bool
    ) -> None:
        """The rows, their tags and the asset rows on the index shard, in one transaction.

        The ids come from one plain ``executemany``: ``event_logs.id`` is SQLite's rowid (``INTEGER
        PRIMARY KEY``), so each row gets the largest id plus one, and the transaction holds the
        file's write lock from its first row to its commit: the rows get consecutive ids ending at
        ``last_insert_rowid()``, the ids one INSERT per event would give. Why not ``RETURNING``:
        SQLite sorts no multi-row RETURNING, so SQLAlchemy runs it as one statement per row (~15 %
        of storing a planned event). The range is checked inside the transaction; should it ever
        not hold, ``_IdsNotConsecutiveError`` rolls the transaction back and ``returning`` stores
        the same rows with the ids returned row by row.
        """
        insert = SqlEventLogStorageTable.insert()
        with self.index_transaction() as conn:
            if returning:
                statement = insert.returning(SqlEventLogStorageTable.c.id, sort_by_parameter_order=True)
                event_ids = [row[0] for row in conn.execute(statement, rows)]
            else:
                event_ids = _inserted_ids(conn, insert, rows)
            self._store_asset_event_tags(conn, list(events), event_ids)  # same rows, one insert
            for event, event_id in _last_writers(events, event_ids):
                self._store_asset_event(conn, event, event_id)


class MembenchSqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage with :class:`BatchingSqliteEventLogStorage` as its event log.

    Built under an exclusive lock on ``<base_dir>/.storage.lock``. Why: Dagster creates each of its
    SQLite files (``history/runs.db``, the event index, ``schedules/schedules.db``) by looking for
    its alembic revision and, when there is none, creating the tables and stamping one. Two
    processes opening a fresh home at once (the first two runs, or ``dagster dev`` and a run) both
    found none and both stamped: ``runs.db`` with two alembic heads (16 of 20 fresh homes opened by
    two threads at once), after which every command on that home fails. Under the lock the second
    finds the first one's revision. The set-up also creates the storage before any run
    (resources/instance_home.py).
    """

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        with file_lock(Path(base_dir) / STORAGE_LOCK):
            super().__init__(base_dir, inst_data=inst_data)
            events_dir = event_logs_directory(base_dir)
            os.makedirs(events_dir, exist_ok=True)
            self._event_log_storage.dispose()
            self._event_log_storage = BatchingSqliteEventLogStorage(events_dir)
        os.environ.setdefault(BATCH_SIZE_ENV, DEFAULT_BATCH_SIZE)

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData, config_value: dict[str, str]
    ) -> MembenchSqliteStorage:
        """Built from ``storage: custom: config: {base_dir: ...}`` in dagster.yaml."""
        return cls.from_local(inst_data=inst_data, **config_value)
