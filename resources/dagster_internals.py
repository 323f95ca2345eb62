"""Every Dagster private API (``dagster._...``) the project uses, and only here.

Why one module: a private name can change in any Dagster release without notice. With all of them
here, an upgrade re-checks one file (and the two features built on it, named per use), and
tests/tree/test_dagster_internals.py fails when a ``dagster._`` import appears anywhere else.
The pinned version and what to re-check on an upgrade: docs/design/dagster_upgrade.md.

Each name below says who uses it, why no public API does, and which public API would replace it.
"""

# isort: skip_file
# (grouped by the feature that needs them, not alphabetically: each group is one upgrade question)

from __future__ import annotations

# ---- per-question status and metadata (assets/partition_status.py) -------------------------------
# A stage step yields one output for its whole partition range; Dagster then materializes every
# partition of the range with the run's metadata, failed questions included (no public per-partition
# result: dagster-io/dagster#17836). The step's output carries the metadata key with which Dagster
# marks an output whose asset events the step logged itself (Dagster sets it for source-asset
# observations), so no event is generated for the range; the step logs one materialization per ok
# question and one observation per failed question, in batches as questions finish, through the step's logger.
# Replace with a public per-partition result (e.g. a partition on MaterializeResult) when Dagster
# has one, then delete these four names.
from dagster._core.definitions.source_asset import (
    SYSTEM_METADATA_KEY_SOURCE_ASSET_OBSERVATION as EVENTS_LOGGED_BY_STEP,  # output: "events logged by the step"
)
from dagster._core.events import (
    DagsterEvent as DagsterEvent,  # public as dg.DagsterEvent, but its step-event builders are not documented
    DagsterEventBatchMetadata as DagsterEventBatchMetadata,  # one batch for all questions of a step
    generate_event_batch_id as generate_event_batch_id,  # id of that batch
)

# ---- batched SQLite event log (resources/event_log.py) --------------------------------------------
# Dagster's SQLite storage stores each event of a batch on its own (~7-8 ms each here); the
# project's storage subclasses it to store a batch in one transaction per shard. Instance storage
# is a pluggable class (``storage: custom`` in dagster.yaml), but the classes to subclass and the
# helpers they use are internal. No public replacement exists; the alternatives are the stock
# SQLite storage (slower, same results: tests/dagster/test_event_log.py compares them) or Postgres
# (dagster-postgres, configs/dagster_postgres.yaml), which batches on its own.
from dagster._core.events import ASSET_EVENTS as ASSET_EVENTS  # the event types that write asset rows
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    SqliteEventLogStorage as SqliteEventLogStorage,  # the event log subclassed
)
from dagster._core.storage.event_log.schema import (
    SqlEventLogStorageTable as SqlEventLogStorageTable,  # the event_logs table: a batch's rows inserted at once
)
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage as DagsterSqliteStorage,  # the instance storage subclassed
    _event_logs_directory as event_logs_directory,  # where the stock storage keeps its event shards
)
from dagster._serdes import ConfigurableClassData as ConfigurableClassData  # ``storage: custom`` config data

# ---- tests only (tests/dagster/test_event_log.py) ---------------------------------------------------------
# Building planned events by hand to compare the batched and the stock storage event for event.
from dagster._core.events import (
    AssetCheckEvaluationPlanned as AssetCheckEvaluationPlanned,  # payload of a check's planned event
    AssetMaterializationPlannedData as AssetMaterializationPlannedData,  # payload of an asset's planned event
)

# ---- fresh-home check (resources/instance_home.py) -------------------------------------------------
# The set-up checks that each SQLite file of a Dagster home records one schema revision, and repairs a
# file that Dagster's start-up race stamped twice (its head revision and an older one) by keeping the
# head: the tables were created at the head schema. Dagster has no public API for its schema revision;
# the check alone needs none, so drop the repair if this name goes.
from dagster._core.storage.sql import get_alembic_config as get_alembic_config  # Dagster's alembic scripts

__all__ = [
    "ASSET_EVENTS",
    "EVENTS_LOGGED_BY_STEP",
    "AssetCheckEvaluationPlanned",
    "AssetMaterializationPlannedData",
    "ConfigurableClassData",
    "DagsterEvent",
    "DagsterEventBatchMetadata",
    "DagsterSqliteStorage",
    "SqlEventLogStorageTable",
    "SqliteEventLogStorage",
    "event_logs_directory",
    "generate_event_batch_id",
    "get_alembic_config",
]
