"""The shipped instance storage (resources/event_log.py) records what Dagster's stock SQLite storage does.

Two instances, stock and batched, run the same partitioned jobs: a range run of 12 partitions that
succeeds, then a range run of 4 that fails. Partition status, materialized partitions, the planned
and materialization event records (per partition, in order) and each asset's last run must be equal,
and on the batched instance the asset events must have gone through ``store_event_batch`` (counted)
rather than one ``store_event`` each.
"""

from collections import Counter
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa

from resources.dagster_internals import (
    ASSET_EVENTS,
    AssetCheckEvaluationPlanned,
    AssetMaterializationPlannedData,
    DagsterEvent,
    SqliteEventLogStorage,
)
from resources.event_log import BATCH_SIZE_ENV, BatchingSqliteEventLogStorage, MembenchSqliteStorage, _segments

KEYS = [f"q{i:02d}" for i in range(12)]
PARTS = dg.StaticPartitionsDefinition(KEYS)
ASSETS = [dg.AssetKey(["ev", "stage_a"]), dg.AssetKey(["ev", "stage_b"])]


@dg.asset(key=ASSETS[0], partitions_def=PARTS, backfill_policy=dg.BackfillPolicy.single_run())
def stage_a(context: dg.AssetExecutionContext) -> None:
    """Materializes every partition of its range, or fails when the run is tagged to fail."""
    if context.run.tags.get("fail") == "yes":
        raise dg.Failure("this run fails")


@dg.asset(key=ASSETS[1], deps=[ASSETS[0]], partitions_def=PARTS, backfill_policy=dg.BackfillPolicy.single_run())
def stage_b() -> None:
    """A downstream stage over the same range."""


@dg.asset_check(asset=ASSETS[1])
def stage_b_rows() -> dg.AssetCheckResult:
    """Its planned event sits among the asset events of a run's first batch (stored singly)."""
    return dg.AssetCheckResult(passed=True)


JOB = dg.Definitions(
    assets=[stage_a, stage_b], asset_checks=[stage_b_rows], jobs=[dg.define_asset_job("both")]
).resolve_job_def("both")


def _run(instance: dg.DagsterInstance, first: str, last: str, *, fail: bool) -> None:
    tags = {"dagster/asset_partition_range_start": first, "dagster/asset_partition_range_end": last}
    if fail:
        tags["fail"] = "yes"
    result = JOB.execute_in_process(instance=instance, tags=tags, raise_on_error=False)
    assert result.success is not fail


def _snapshot(instance: dg.DagsterInstance) -> dict[str, object]:
    """Everything partition status is computed from, without ids and timestamps."""
    out: dict[str, object] = {}
    for key in ASSETS:
        name = key.to_user_string()
        out[f"{name} status"] = instance.get_status_by_partition(key, KEYS, PARTS)
        out[f"{name} materialized"] = sorted(instance.get_materialized_partitions(key))
        for kind in (dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED, dg.DagsterEventType.ASSET_MATERIALIZATION):
            flt = dg.EventRecordsFilter(event_type=kind, asset_key=key)
            rows = instance.event_log_storage.get_event_records(flt, ascending=True)
            out[f"{name} {kind.name}"] = [(r.partition_key, r.event_log_entry.step_key) for r in rows]
        [record] = instance.get_asset_records([key])
        last = record.asset_entry.last_materialization_record
        assert last is not None and last.storage_id == rows[-1].storage_id  # the newest materialization
        out[f"{name} last partition"] = last.partition_key
        runs = [r.run_id for r in reversed(instance.get_runs())]
        out[f"{name} last run"] = runs.index(record.asset_entry.last_run_id or "")
        flt = dg.EventRecordsFilter(dg.DagsterEventType.ASSET_MATERIALIZATION, asset_key=key, asset_partitions=["q02"])
        out[f"{name} q02 materializations"] = len(instance.event_log_storage.get_event_records(flt))
    for n, run in enumerate(reversed(instance.get_runs())):
        logs = instance.all_logs(run.run_id)
        out[f"run {n} events"] = [
            (e.dagster_event_type, e.dagster_event.asset_key, e.dagster_event.partition) if e.dagster_event else None
            for e in logs
        ]
    return out


def test_segments_keep_order_and_split_other_events() -> None:
    def planned(run: str, name: str) -> dg.EventLogEntry:
        event = DagsterEvent.build_asset_materialization_planned_event(
            "j", "s", AssetMaterializationPlannedData(dg.AssetKey(name), partition="p")
        )
        return dg.EventLogEntry(None, "DEBUG", "", run, 0.0, job_name="j", dagster_event=event)

    def check_planned(run: str) -> dg.EventLogEntry:
        data = AssetCheckEvaluationPlanned(asset_key=dg.AssetKey("a"), check_name="c")
        event = DagsterEvent("ASSET_CHECK_EVALUATION_PLANNED", "j", event_specific_data=data)
        return dg.EventLogEntry(None, "DEBUG", "", run, 0.0, job_name="j", dagster_event=event)

    events = [planned("r1", "a"), planned("r1", "b"), check_planned("r1"), planned("r1", "c"), planned("r2", "c")]
    segments = _segments(events)
    assert [(batched, len(seg)) for batched, seg in segments] == [(True, 2), (False, 1), (True, 1), (True, 1)]
    assert [e for _, seg in segments for e in seg] == events


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts asset events stored one by one vs in batches on the batched storage."""
    counts: Counter[str] = Counter()
    single, batch = BatchingSqliteEventLogStorage.store_event, BatchingSqliteEventLogStorage.store_event_batch

    def store_event(self: BatchingSqliteEventLogStorage, event: dg.EventLogEntry) -> None:
        if event.is_dagster_event and event.dagster_event_type in ASSET_EVENTS:
            counts["asset events stored singly"] += 1
        single(self, event)

    def store_event_batch(self: BatchingSqliteEventLogStorage, events: list[dg.EventLogEntry]) -> None:
        counts["batches"] += 1
        counts["asset events in batches"] += sum(e.dagster_event_type in ASSET_EVENTS for e in events)
        counts["asset check events in batches"] += sum(e.dagster_event_type not in ASSET_EVENTS for e in events)
        batch(self, events)

    monkeypatch.setattr(BatchingSqliteEventLogStorage, "store_event", store_event)
    monkeypatch.setattr(BatchingSqliteEventLogStorage, "store_event_batch", store_event_batch)
    return counts


def test_batched_storage_records_what_the_stock_storage_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: Counter[str]
) -> None:
    monkeypatch.setenv(BATCH_SIZE_ENV, "1000")
    custom = {"module": "resources.event_log", "class": "MembenchSqliteStorage"}
    snapshots = []
    for storage in ({}, {"storage": {"custom": {**custom, "config": {"base_dir": str(tmp_path / "b")}}}}):
        with dg.instance_for_test(overrides=storage) as instance:
            _run(instance, KEYS[0], KEYS[-1], fail=False)
            _run(instance, KEYS[2], KEYS[5], fail=True)
            snapshots.append(_snapshot(instance))
            if storage:
                assert isinstance(instance.event_log_storage, BatchingSqliteEventLogStorage)
    stock, batched = snapshots
    assert batched == stock
    status = stock["ev/stage_a status"]
    assert isinstance(status, dict)
    assert {k for k, v in status.items() if v == dg.AssetPartitionStatus.FAILED} == set(KEYS[2:6])
    assert stock["ev/stage_b materialized"] == KEYS
    # planned: (12 + 4 partitions) x 2 assets = 32; materialized: 12 x 2 assets in the first run = 24
    assert counted["asset events in batches"] == 56
    assert counted["asset events stored singly"] == 0
    assert counted["batches"] == 4  # each run's planned events, each asset's materializations in run 1
    assert counted["asset check events in batches"] == 2  # stage_b_rows planned in each run, stored singly


def test_storage_keeps_dagsters_sqlite_layout(tmp_path: Path) -> None:
    """Same files as ``storage: sqlite``: an existing .dagster_home keeps its history."""
    storage = MembenchSqliteStorage.from_local(str(tmp_path))
    try:
        assert isinstance(storage.event_log_storage, BatchingSqliteEventLogStorage)
        assert (tmp_path / "history" / "runs").is_dir() and (tmp_path / "schedules").is_dir()
    finally:
        storage.dispose()


def test_shipped_dagster_yaml_uses_it() -> None:
    import yaml

    from tests.support.paths import PROJECT_ROOT

    cfg = yaml.safe_load((PROJECT_ROOT / "configs" / "dagster.yaml").read_text())
    assert cfg["storage"]["custom"]["class"] == MembenchSqliteStorage.__name__


def test_index_connection_kept_open_run_shards_checkpointed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One index shard connection per process, commits without fsync, run shards closed after each use.

    Counted with SQLAlchemy's pool ``connect`` event: the index shard is opened once for a whole run
    (Dagster opens a new engine per use: ~250 per unchanged sample rerun); a run shard is opened per
    use and closed, so its WAL is checkpointed into ``<run_id>.db`` (the file the UI's live run log
    watches) and no ``-wal`` file is left once the run is over.
    """
    import sqlalchemy as sa

    opened: Counter[str] = Counter()

    def on_connect(dbapi_conn: object, _record: object) -> None:
        path = dbapi_conn.cursor().execute("PRAGMA database_list").fetchone()[2]  # type: ignore[attr-defined]
        opened["index" if path.endswith("index.db") else "run shard"] += 1

    asked: Counter[str] = Counter()  # Dagster's has_table opens an engine of its own (asked once per table)
    has_table = SqliteEventLogStorage.has_table

    def counted_has_table(self: SqliteEventLogStorage, name: str) -> bool:
        asked[name] += 1
        return has_table(self, name)

    monkeypatch.setattr(SqliteEventLogStorage, "has_table", counted_has_table)
    monkeypatch.setenv(BATCH_SIZE_ENV, "1000")
    base = tmp_path / "b"
    custom = {"module": "resources.event_log", "class": "MembenchSqliteStorage", "config": {"base_dir": str(base)}}
    sa.event.listen(sa.pool.Pool, "connect", on_connect)
    try:
        with dg.instance_for_test(overrides={"storage": {"custom": custom}}) as instance:
            opened.clear()  # creating the shards (Dagster's own init, on its own engines) is not counted
            _run(instance, KEYS[0], KEYS[-1], fail=False)
            during_run, asked_in_run = dict(opened), sum(asked.values())
            run_id = instance.get_runs()[0].run_id
            storage = instance.event_log_storage
            assert isinstance(storage, BatchingSqliteEventLogStorage)
            for shard in ("index", run_id):  # NORMAL (1), not Dagster's default FULL (2)
                with storage._connect(shard) as conn:
                    assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1
            assert instance.get_status_by_partition(ASSETS[1], KEYS, PARTS) == dict.fromkeys(
                KEYS, dg.AssetPartitionStatus.MATERIALIZED
            )
            instance.wipe()  # deletes the run shards: a kept connection must not write to a deleted file
            _run(instance, KEYS[0], KEYS[1], fail=False)
            assert sorted(instance.get_materialized_partitions(ASSETS[1])) == KEYS[:2]
    finally:
        sa.event.remove(sa.pool.Pool, "connect", on_connect)
    assert during_run["index"] == 1 + asked_in_run, (during_run, asked)
    assert during_run["run shard"] > 10  # opened and closed per use
    events_dir = base / "history" / "runs"
    assert not (events_dir / f"{run_id}.db").exists()  # wiped
    assert not list(events_dir.glob("*.db-wal")), "run shards' WAL left un-checkpointed"


def _planned_events(run_id: str, n: int) -> list[dg.EventLogEntry]:
    """``n`` planned events of one run, over two assets and ``n // 2`` partitions."""
    events = []
    for i in range(n):
        data = AssetMaterializationPlannedData(ASSETS[i % 2], partition=f"q{i // 2:02d}")
        event = DagsterEvent.build_asset_materialization_planned_event("j", "s", data)
        events.append(
            dg.EventLogEntry(None, "DEBUG", "", run_id, 1_700_000_000.0 + i, job_name="j", dagster_event=event)
        )
    return events


def _event_rows(storage: SqliteEventLogStorage, shard: str) -> list[tuple[object, ...]]:
    connection = storage.index_connection() if shard == "index" else storage.run_connection(shard)
    with connection as conn:  # the shard's own rows, ids included
        return [tuple(r) for r in conn.exec_driver_sql("SELECT * FROM event_logs ORDER BY id").fetchall()]


def _assert_stored_as_stock(batched: SqliteEventLogStorage, stock: SqliteEventLogStorage) -> None:
    """Both shards' event rows (ids included) and the asset records equal the stock storage's."""
    for shard in ("r1", "index"):
        assert _event_rows(batched, shard) == _event_rows(stock, shard)
    for key in ASSETS:
        assert batched.get_asset_records([key]) == stock.get_asset_records([key])


def test_a_batch_is_one_insert_per_shard_with_the_rows_of_one_insert_per_event(tmp_path: Path) -> None:
    """The batch's event rows go in through one compiled executemany per shard (not a statement built per event,
    nor an INSERT ... RETURNING run row by row on the index shard), and both shards hold exactly the
    rows (ids, serialized events, timestamps) that storing each event on its own with the stock
    storage leaves; the asset rows point at the same ids."""
    events = _planned_events("r1", 30)
    stock = SqliteEventLogStorage(str(tmp_path / "stock"))
    for event in events:
        stock.store_event(event)
    batched = BatchingSqliteEventLogStorage(str(tmp_path / "batched"))
    executed: list[tuple[str, bool]] = []

    def note(_conn: object, _cursor: object, statement: str, _params: object, _ctx: object, many: bool) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO EVENT_LOGS"):
            executed.append((statement, many))

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", note)
    try:
        batched.store_event_batch(events)
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", note)
    try:
        # was 60 statements, each built, compiled and executed on its own (many=False)
        assert executed and all(many for _, many in executed), executed
        # one compiled INSERT for both shards: the index shard's ids come from the rowid, not from a
        # RETURNING that SQLite runs row by row (was: a second statement, INSERT ... RETURNING id)
        assert len({statement for statement, _ in executed}) == 1, executed
        assert not any("RETURNING" in statement.upper() for statement, _ in executed)
        _assert_stored_as_stock(batched, stock)
    finally:
        stock.dispose()
        batched.dispose()


def test_ids_not_in_one_range_fall_back_to_returning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Should a batch's index rows ever not get one range of ids, the transaction is rolled back and
    the same rows are stored with their ids returned row by row: still the stock storage's rows.

    Simulated by a range check that fails after the rows were inserted (a later batch, checked for
    real, must then continue from the right id)."""
    import resources.event_log as event_log

    events = _planned_events("r1", 30)
    later = _planned_events("r1", 34)[30:]
    stock = SqliteEventLogStorage(str(tmp_path / "stock"))
    for event in [*events, *later]:
        stock.store_event(event)
    batched = BatchingSqliteEventLogStorage(str(tmp_path / "batched"))
    real = event_log._inserted_ids
    calls: list[int] = []

    def inserted_then_refused(conn: sa.Connection, insert: sa.Insert, rows: list[dict[str, object]]) -> list[int]:
        calls.append(len(real(conn, insert, rows)))
        raise event_log._IdsNotConsecutiveError("simulated")

    monkeypatch.setattr(event_log, "_inserted_ids", inserted_then_refused)
    batched.store_event_batch(events)
    monkeypatch.setattr(event_log, "_inserted_ids", real)
    batched.store_event_batch(later)
    try:
        assert calls == [30]
        _assert_stored_as_stock(batched, stock)
    finally:
        stock.dispose()
        batched.dispose()
