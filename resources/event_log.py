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
Pinned to the Dagster version in pyproject.toml (internal storage API); tests/test_event_log.py
compares its stored events and partition status with the stock storage.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from dagster._core.events import ASSET_EVENTS
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sqlalchemy_compat import db_result
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage, _event_logs_directory
from dagster._serdes import ConfigurableClassData
from dagster._utils import mkdir_p

BATCH_SIZE_ENV = "DAGSTER_EVENT_BATCH_SIZE"
DEFAULT_BATCH_SIZE = "1000"


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


class BatchingSqliteEventLogStorage(SqliteEventLogStorage):
    """SQLite event log whose ``store_event_batch`` uses one transaction per shard."""

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
        """Asset events of one run: one transaction on the run shard, one on the index shard."""
        statements = [self.prepare_insert_event(event) for event in events]
        with self.run_connection(events[0].run_id) as conn:
            for statement in statements:
                conn.execute(statement)
        with self.index_transaction() as conn:
            for event, statement in zip(events, statements, strict=True):
                with db_result(conn, statement) as result:
                    event_id = result.inserted_primary_key[0]
                self._store_asset_event_tags(conn, [event], [event_id])
                self._store_asset_event(conn, event, event_id)


class MembenchSqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage with :class:`BatchingSqliteEventLogStorage` as its event log."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(base_dir, inst_data=inst_data)
        events_dir = _event_logs_directory(base_dir)
        mkdir_p(events_dir)
        self._event_log_storage.dispose()
        self._event_log_storage = BatchingSqliteEventLogStorage(events_dir)
        os.environ.setdefault(BATCH_SIZE_ENV, DEFAULT_BATCH_SIZE)

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData, config_value: dict[str, str]
    ) -> MembenchSqliteStorage:
        """Built from ``storage: custom: config: {base_dir: ...}`` in dagster.yaml."""
        return cls.from_local(inst_data=inst_data, **config_value)
