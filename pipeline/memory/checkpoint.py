"""Per (memory system, haystack) ingestion checkpoint: the units so far + how many sessions are done.

Why a file per (system, haystack): ingestion is shared by every question of a haystack (LoCoMo: 10
haystacks for 1,986 questions), so its progress cannot live in a per-question row. The file holds
the units added by the completed sessions and, in its Parquet metadata, ``sessions_completed``
plus what the units depend on (unit config hash, haystack fingerprint); a checkpoint made under
another config or for a changed haystack is ignored and ingestion starts over. Writes are atomic
(temp file + rename), so ``kill -9`` leaves the previous checkpoint intact.

Layout: ``<results_dir>/parquet/memory/<system>/<dataset>/<haystack_id>.parquet`` (the id made
file-safe; a hash suffix keeps two ids that sanitize alike apart).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa

from pipeline.core.partitions import sanitize
from pipeline.memory.base import MemoryUnit
from pipeline.store.results import PARTITION_COMPRESSION, ResultStore, read_parquet_file, write_parquet_atomic
from pipeline.util.filelock import file_lock, keyed_lock, keyed_locks_available

MEMORY_STAGE_DIR = "memory"
CHECKPOINT_LOCKS = ".checkpoints.lock"  # in each checkpoint folder: the locks of its checkpoints, one byte each
_META_KEY = b"membench.memory_checkpoint"
log = logging.getLogger(__name__)
_NAIVE_MICROSECONDS = pa.timestamp("us")  # the one type ``timestamps`` converts in Python (Arrow does any other)
_EPOCH = dt.datetime(1970, 1, 1)  # a naive timestamp column's zero

MEMORY_UNIT_SCHEMA = pa.schema(
    [
        ("unit_id", pa.string()),
        ("haystack_id", pa.string()),
        ("session_key", pa.string()),
        ("session_position", pa.int64()),
        ("turn_ids", pa.list_(pa.string())),
        ("text", pa.string()),
        ("timestamp", pa.timestamp("us")),
        ("role", pa.string()),
        ("kind", pa.string()),
    ]
)


@dataclass(frozen=True)
class CheckpointState:
    """What the metadata records about an ingestion in progress (or finished)."""

    system: str
    system_kind: str
    unit_hash: str
    fingerprint: str  # hash of the haystack's session keys in order
    sessions_completed: int
    sessions_total: int
    ingest_seconds: float  # cumulative over all runs that worked on it

    @property
    def complete(self) -> bool:
        return self.sessions_completed >= self.sessions_total


@dataclass(frozen=True)
class Checkpoint:
    state: CheckpointState
    units: list[MemoryUnit] = field(default_factory=list)


def haystack_fingerprint(session_keys: list[str]) -> str:
    return hashlib.sha256("\n".join(session_keys).encode()).hexdigest()[:16]


def file_safe(haystack_id: str) -> str:
    safe = sanitize(haystack_id)
    if safe == haystack_id:
        return safe
    return f"{safe}-{hashlib.sha256(haystack_id.encode()).hexdigest()[:8]}"


def checkpoint_path(store: ResultStore, system: str, dataset: str, haystack_id: str) -> Path:
    return store.parquet_root / MEMORY_STAGE_DIR / system / dataset / f"{file_safe(haystack_id)}.parquet"


# The checkpoints' writer settings besides compression. Dictionary pages only for the columns whose
# values repeat within a memory (its haystack, sessions, roles and kinds): a unit's id, turn ids and
# text are distinct, where a dictionary page costs time and bytes for nothing. Statistics only for
# ``kind``, the one column whose footer bounds are read (pipeline/catalog/products.py
# ``checkpoints_may_hold``). Measured on 400 LongMemEval_S checkpoints: 0.33 -> 0.28 ms CPU to
# encode one, 42.5 -> 39.5 KiB; the table read back is the same.
DICTIONARY_COLUMNS = ("haystack_id", "session_key", "role", "kind")
STATISTICS_COLUMNS = ("kind",)
CHECKPOINT_WRITE_OPTIONS = {"use_dictionary": list(DICTIONARY_COLUMNS), "write_statistics": list(STATISTICS_COLUMNS)}


@contextlib.contextmanager
def checkpoint_lock(path: Path) -> Iterator[None]:
    """Hold the lock of the checkpoint at ``path`` while a run brings it up to date (a concurrent
    run waits, then resumes from it).

    The lock is the checkpoint's byte of its folder's one lock file (``CHECKPOINT_LOCKS``), not a
    lock file per checkpoint: one new file per (system, haystack) was most of what locking cost
    (pipeline/util/filelock.py ``keyed_lock``). Where byte-range locks of that kind are missing
    (not Linux) it is the per-checkpoint file as before. A per-checkpoint file an older membench
    made is held as well, so a run of that version at the same time is still waited for.
    """
    own = path.with_name(f"{path.name}.lock")
    if not keyed_locks_available():
        with file_lock(own):
            yield
        return
    with keyed_lock(path.with_name(CHECKPOINT_LOCKS), path.name), contextlib.ExitStack() as older:
        if own.exists():
            older.enter_context(file_lock(own))
        yield


def units_to_table(units: list[MemoryUnit]) -> pa.Table:
    """The units as a MEMORY_UNIT_SCHEMA table, built column by column.

    Why not ``asdict`` per unit: it deep-copies every field of every unit, and a checkpoint of
    LongMemEval_S turns holds ~500 units per haystack, one file per (system, haystack). Why one
    tuple per unit, transposed, and the turn ids' tuples as they are: a ``getattr`` per field and
    unit and a list per unit's turn ids were ~20 % of the build.
    """
    if not units:
        return MEMORY_UNIT_SCHEMA.empty_table()
    rows = [
        (u.unit_id, u.haystack_id, u.session_key, u.session_position, u.turn_ids, u.text, u.timestamp, u.role, u.kind)
        for u in units
    ]
    arrays = [pa.array(values, f.type) for values, f in zip(zip(*rows, strict=True), MEMORY_UNIT_SCHEMA, strict=True)]
    return pa.Table.from_arrays(arrays, schema=MEMORY_UNIT_SCHEMA)


def units_from_table(table: pa.Table) -> list[MemoryUnit]:
    """The units of a checkpoint table, read column by column (same values as row dicts)."""
    names = MEMORY_UNIT_SCHEMA.names
    turn_ids = names.index("turn_ids")
    columns = [table.column(name).to_pylist() if name != "timestamp" else timestamps(table[name]) for name in names]
    columns[turn_ids] = [tuple(ids or ()) for ids in columns[turn_ids]]
    return units_of_rows(names, zip(*columns, strict=True))


def units_of_rows(names: list[str], rows: Iterable[tuple[object, ...]]) -> list[MemoryUnit]:
    """``[MemoryUnit(*row) for row in rows]``'s units (``names``: the fields, in order), made without
    the dataclass's ``__init__``.

    Why: a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, nine
    calls per unit, ~40 % of making units from a checkpoint's columns; filling the instance's
    ``__dict__`` in one update gives the same object (equal, hashed alike, still frozen), as long
    as MemoryUnit has no ``__post_init__``, defaults or slots (tests/memory/test_checkpoint.py
    checks). 996 LongMemEval_S checkpoints: ``units_from_table`` 0.33 -> 0.26 s CPU.
    """
    new = object.__new__
    units = []
    for row in rows:
        unit = new(MemoryUnit)
        unit.__dict__.update(zip(names, row, strict=True))
        units.append(unit)
    return units


def timestamps(column: pa.ChunkedArray) -> list[object]:
    """A timestamp column's values (``to_pylist``'s), each distinct value made into a ``datetime`` once.

    Why: a memory's units share their session's date (~500 units, ~50 dates a LongMemEval_S
    haystack) and making a ``datetime`` was most of turning a checkpoint into units. Why in Python
    from the microseconds (the epoch plus a ``timedelta``) and a dict, not ``np.unique`` and Arrow's
    ``to_pylist`` of the distinct values: on ~150 values those calls' fixed costs were most of it
    (996 LongMemEval_S checkpoints: 0.131 -> 0.074 s CPU). A column with nulls, or of another unit
    or with a time zone, is converted by Arrow as it is.
    """
    values = column.combine_chunks()
    if values.null_count or values.type != _NAIVE_MICROSECONDS:
        converted: list[object] = values.to_pylist()
        return converted
    micros = values.view(pa.int64()).to_numpy().tolist()
    made = {us: _EPOCH + dt.timedelta(microseconds=us) for us in set(micros)}
    return [made[us] for us in micros]


def save(path: Path, checkpoint: Checkpoint) -> None:
    table = units_to_table(checkpoint.units)
    meta = {_META_KEY: json.dumps(asdict(checkpoint.state)).encode()}
    # one file per (haystack, system): ~4k small files on configs/shared.yaml, like the stage partitions
    write_parquet_atomic(path, table.replace_schema_metadata(meta), PARTITION_COMPRESSION, CHECKPOINT_WRITE_OPTIONS)


def load(path: Path) -> Checkpoint | None:
    """The checkpoint at ``path``, or None when absent or unreadable (then ingestion restarts)."""
    if not path.exists():
        return None
    try:
        table = read_parquet_file(path)
        raw = (table.schema.metadata or {})[_META_KEY]
        saved = json.loads(raw)
        if "config_hash" in saved:  # written before the unit hash got its name: same value
            saved["unit_hash"] = saved.pop("config_hash")
        state = CheckpointState(**saved)
        return Checkpoint(state, units_from_table(table))
    except (OSError, KeyError, TypeError, ValueError, pa.ArrowException) as exc:
        log.warning("memory checkpoint %s is unreadable (%s); ingestion restarts from session 0", path, exc)
        return None
