"""Result storage: one Parquet file per (asset, partition) plus a DuckDB catalog of views.

Why not the dagster-duckdb IO manager: it writes through the DuckDB file lock, so a user holding
``results.duckdb`` open in the DuckDB CLI blocks a run (~100 s then failure, measured). Here the
pipeline only ever writes Parquet (temp name + ``os.replace``, atomic) and rebuilds the catalog
file under a temp name before renaming it over the old one; an open CLI keeps reading its old
inode and never blocks a run. No reader reads the live files, which runs replace under it: a
connection reads hard links made when it opens, the catalog hard links made when it is built
(pipeline/store/catalog_files.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.catalog.views import (
    CATALOG_VIEWS,
    USER_DATABASE,
    CatalogKept,
    ViewCreator,
    comment_views,
    create_report_views,
    keep_user_objects,
    view_creator_names,
)
from pipeline.core.records import CANONICAL_TABLES, DATASET_FAILURE_KEY_SQL, LOAD_FAILURE_KEY_SQL
from pipeline.store.catalog_files import CATALOG_FILES_DIR, CATALOG_LINK, link_tree, new_folder, retire_superseded
from pipeline.store.file_schemas import same_schema
from pipeline.util.coalesce import Coalescer
from pipeline.util.files import write_new_file
from pipeline.util.fingerprint import parquet_files, pipeline_code_files, update_with_files
from pipeline.util.heap import trim_heap

CATALOG_NAME = "results.duckdb"
CATALOG_MARK = ".catalog_inputs"  # fingerprint of what the current results.duckdb was built from
CATALOG_WORK = "catalog"  # coalesced rebuilds: .catalog.tickets / .catalog.lock / .catalog.coalesce
UNVIEWED_DIRS = frozenset({"_index"})  # Parquet under parquet/ that no view reads
PINNED_DIR = ".pinned"  # <results>/.pinned/<pid>-<uuid>/parquet/...: hard links an open connection reads
_log = logging.getLogger(__name__)
# the catalog file is written in this storage format so that the ``duckdb`` shell of the
# ``duckdb-cli`` package (1.5.x; the Python package is 2.x) can open it
CATALOG_STORAGE_VERSION = "v1.5.0"

# table name -> glob relative to <results_dir>/parquet
TABLE_GLOBS: dict[str, str] = {
    **{t.name: t.file_glob for t in CANONICAL_TABLES},  # declared in pipeline.core.records
    "dataset_failures": "dataset_failures/*.parquet",
    "mc10_crosscheck": "canonical/*/mc10_crosscheck.parquet",
    "embeddings": "embeddings/*/*.parquet",
    "ingestion": "ingestion/*.parquet",
    "retrievals": "retrievals/*.parquet",
    "retrieval_metrics": "retrieval_metrics/*.parquet",
    "agentic_retrieval_metrics": "agentic_retrieval_metrics/*.parquet",  # pipeline.report.agentic
    "answers": "answers/*.parquet",
    "judgments": "judgments/*.parquet",
    "llm_calls": "llm_calls/*.parquet",
    "run_manifest": "manifest/run_manifest.parquet",  # pipeline/provenance/manifest.py
    "integrity_flags": "manifest/integrity_flags.parquet",
    "judge_probes": "judge_probes/*.parquet",  # membench judge-probe (pipeline/judges/probe_run.py)
    "isolation_checks": "integrity/isolation/*.parquet",  # membench check-isolation (pipeline/memory/isolation.py)
}

# per-question stages (partitioned assets): their files share the status columns
STAGE_TABLES = ("ingestion", "retrievals", "answers", "judgments")


# Each view over a stage's ~3k partition files reads every file's footer when it is bound, and
# the catalog binds the stage views again for every view built on them (progress, reports):
# with the footers cached, a rebuild on configs/shared.yaml takes 4.8 s, not 7.2 s. Only for the
# rebuild's own short-lived connection: the cache held ~415 MB there (DuckDB's OBJECT_CACHE) until
# the connection closed, too much for the long-lived report and query connections.
METADATA_CACHE_SQL = "SET parquet_metadata_cache = true"


# Per-question partition files (a few rows each) are written with snappy, the rest with zstd:
# on configs/shared.yaml's files, zstd's per-column set-up made a 7 KB answers file cost 1.7 ms
# to write and 1.8 ms to read vs 0.6-0.9 and 1.2 ms with snappy, at the same size (retrievals:
# 2.5 vs 1.0-1.4 ms to write, 2.3 vs 1.7 ms to read, 28 vs 32 KB), ~12k files a first run.
PARTITION_COMPRESSION = "snappy"

# Tables a report reads many times, copied into the report's in-memory connection once (temp
# tables shadow the views of the same name, also inside the views built on them). Why: every
# query over a view binds it again (every file's footer) and scans every file again; the report's
# views read answers/judgments/progress a dozen times. On configs/shared.yaml (~15k files) the
# benchmark_report step went from 81.7 s to 34.6 s (with the drill-down's gold ranks computed in
# SQL, pipeline/report/questions.py). Order matters: progress reads answers and judgments.
# retrievals stays a view: its units (context texts) are large and only the drill-down reads them.
SNAPSHOT_TABLES = ("answers", "judgments", "progress")
# Report views a snapshot reads more than once, copied once after the report views are made: the
# report's accuracy section, its headline query and the repeats views each evaluated
# accuracy_report again (it joins every retrievals file), and at a run's end the manifest's
# headline once more (~3 s CPU of a 2,000-question run's end).
SNAPSHOT_VIEWS = ("accuracy_report",)
# A snapshot's queries run on one DuckDB thread. Why: what it scans is thousands of one-row files
# (the copies above, ``progress``, the drill-down's and the manifest's reads of ``retrievals``), where
# a second thread adds hand-offs, not speed: a 2,000-question run's end (``refresh_run_end`` in
# process, 2 cores) took ~0.5 s less CPU on one thread and peaked at ~310 MB of RSS instead of ~610.
SNAPSHOT_THREADS = 1


# Tables up to this size (Arrow's in-memory bytes) are written to a buffer first, then to the file
# in one write: Arrow's file sink issues a write() per page header and column chunk, ~110 system
# calls for a per-question stage file of ~28 columns, each one more hand-over of the GIL in a stage
# whose 32 LLM threads wait on it (strace of the LLM throughput run: ~3,500 writes/s). Larger
# tables stream to the file, so a big table never sits in memory twice.
BUFFERED_WRITE_BYTES = 8 << 20


def write_parquet_atomic(
    path: Path, table: pa.Table, compression: str = "zstd", options: Mapping[str, Any] | None = None
) -> None:
    """Write ``table`` to ``path`` via a temp file in the same folder and an atomic rename.

    The bytes are those ``pq.write_table`` writes to a file, whichever way they reach it;
    ``options``: more of its writer settings (a caller's own, e.g. the memory checkpoints').
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    settings = dict(options or {})
    try:
        # get_total_buffer_size, not nbytes: whole buffers, not the bytes used (593 vs 653 B for a
        # 28-column answers row; a slice of a big table counts its whole buffers, so it streams),
        # ~1 us against nbytes' ~47 us, paid by every per-question file. Same bytes either way.
        if table.get_total_buffer_size() <= BUFFERED_WRITE_BYTES:
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink, compression=compression, **settings)
            write_new_file(tmp, sink.getvalue())
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, tmp, compression=compression, **settings)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def read_parquet_file(path: Path, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file's table (``columns``: only those), its schema metadata kept.

    Why not ``pq.read_table``: for one file it goes through the dataset layer (filesystem and
    path resolution, discovery), twice the cost of reading the file itself on the small
    per-question and checkpoint files a stage reads by the thousand (~0.5 vs ~1.1 ms). Why on
    this thread and without pre-buffering: on files of a few rows Arrow's thread pool and its
    coalesced reads cost more than the decoding (a 28-column, 3-row file: ~1.28 -> ~0.77 ms CPU;
    996 LongMemEval_S checkpoints: 0.41 -> 0.27 s); the same table.
    """
    with pq.ParquetFile(path, pre_buffer=False) as f:
        return f.read(columns=columns, use_threads=False)


# The per-question stage tables' ``unit_hash`` column was named ``config_hash`` by earlier versions
# (it always held a unit's hash); results folders written then are read as if written now.
UNIT_HASH = "unit_hash"
LEGACY_UNIT_HASH = "config_hash"


def with_unit_hash(table: pa.Table) -> pa.Table:
    """``table`` with an old file's ``config_hash`` column named ``unit_hash`` (new files unchanged)."""
    names = table.column_names
    if LEGACY_UNIT_HASH not in names:
        return table
    if UNIT_HASH in names:  # never written so, but keep the newer name's values
        return table.drop_columns([LEGACY_UNIT_HASH])
    return table.rename_columns([UNIT_HASH if n == LEGACY_UNIT_HASH else n for n in names])


def _present(columns: list[str], names: list[str]) -> list[str]:
    """The file's names for ``columns`` (``unit_hash`` as an older file's ``config_hash``), those it has only."""
    have = set(names)
    if UNIT_HASH not in have and LEGACY_UNIT_HASH in have:  # a file written before the rename
        columns = [LEGACY_UNIT_HASH if c == UNIT_HASH else c for c in columns]
    return [c for c in columns if c in have]


def _source_sql(pattern: str, columns: set[str], uniform: bool = False) -> str:
    """The FROM source of a base view: the files, with a legacy ``config_hash`` read as ``unit_hash``.

    ``columns``: the view's columns as first bound; only a folder holding old files pays a second bind.
    ``uniform``: every file of ``pattern`` has the same schema, and always will (a fixed set of hard
    links, checked by ``file_schemas.same_schema``): each bind then reads the first file's footer,
    not every file's (pipeline/store/file_schemas.py); the rows and columns are the same.
    """
    files = f"read_parquet('{pattern}', union_by_name = {'false' if uniform else 'true'})"
    if LEGACY_UNIT_HASH not in columns:
        return files
    if UNIT_HASH in columns:  # old and new files side by side: each row has one of the two
        star = f"* EXCLUDE ({LEGACY_UNIT_HASH}) REPLACE (coalesce({UNIT_HASH}, {LEGACY_UNIT_HASH}) AS {UNIT_HASH})"
    else:
        star = f"* RENAME ({LEGACY_UNIT_HASH} AS {UNIT_HASH})"
    return f"(SELECT {star} FROM {files})"


def _view_sql(name: str, source: str) -> str:
    return f'CREATE OR REPLACE VIEW "{name}" AS SELECT * FROM {source}'


# A failed answer / judgment row is written before the component ran, so its key columns can be
# NULL; the unit (``system/reader[/judge]``) always names them. ``metric`` of a failed judgment is
# the metric its judge reported on any other row (NULL only if that judge never succeeded).
_KEY_FILL: dict[str, str] = {
    "answers": (
        "coalesce(system, split_part(unit, '/', 1)) AS system, coalesce(reader, split_part(unit, '/', 2)) AS reader"
    ),
    "judgments": (
        "coalesce(system, split_part(unit, '/', 1)) AS system, coalesce(reader, split_part(unit, '/', 2)) AS reader, "
        "coalesce(judge, split_part(unit, '/', 3)) AS judge, "
        "coalesce(metric, max(metric) OVER (PARTITION BY dataset, split_part(unit, '/', 3))) AS metric"
    ),
}


def _filled_view_sql(name: str, source: str) -> str:
    return f'CREATE OR REPLACE VIEW "{name}" AS SELECT * REPLACE ({_KEY_FILL[name]}) FROM {source}'


PROGRESS_SQL = """
CREATE OR REPLACE VIEW progress AS
WITH stage_rows AS ({stage_union}),
per_stage AS (
  SELECT partition_key, stage,
         count(*) FILTER (WHERE status = 'ok') AS units_ok,
         count(*) FILTER (WHERE status = 'failed') AS units_failed,
         sum(duration_s) AS duration_s,
         max(finished_at) AS finished_at,
         string_agg(error, ' | ') FILTER (WHERE status = 'failed') AS errors
  FROM stage_rows GROUP BY ALL
),
stages AS (SELECT unnest({stages}) AS stage),
keys AS (
  SELECT dataset, partition_key, question_id FROM questions
  {failures_union}
)
SELECT k.dataset, k.partition_key, k.question_id, s.stage,
       CASE WHEN p.units_failed > 0 THEN 'failed'
            WHEN p.units_ok > 0 THEN 'done'
            ELSE 'missing' END AS status,
       coalesce(p.units_ok, 0) AS units_ok, coalesce(p.units_failed, 0) AS units_failed,
       p.duration_s, p.finished_at, p.errors
FROM keys k CROSS JOIN stages s
LEFT JOIN per_stage p ON p.partition_key = k.partition_key AND p.stage = s.stage
"""

PROGRESS_SUMMARY_SQL = """
CREATE OR REPLACE VIEW progress_summary AS
SELECT dataset, stage,
       count(*) FILTER (WHERE status = 'done') AS done,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       count(*) FILTER (WHERE status = 'missing') AS missing,
       round(sum(duration_s), 2) AS total_duration_s,
       round(median(duration_s), 3) AS p50_duration_s
FROM progress GROUP BY ALL ORDER BY dataset, stage
"""


@dataclass(frozen=True)
class Snapshot:
    """A ``ResultStore.pinned_snapshot()`` connection and ``parquet``, the hard links its views read:
    the results' ``parquet/`` as it was when the snapshot was made (``ResultStore.relink`` aside)."""

    con: duckdb.DuckDBPyConnection
    parquet: Path


@dataclass(frozen=True)
class ResultStore:
    """Parquet files under ``results_dir`` and the DuckDB catalog ``results_dir/results.duckdb``.

    A plain value (no Dagster): every stage, report and CLI command builds one from the config's
    ``results_dir``; the ``benchmark`` resource (resources/benchmark.py) hands it to the assets.
    """

    results_dir: str = "results/sample"
    views: tuple[ViewCreator, ...] = CATALOG_VIEWS  # the report views over the base tables (explicit list)

    @cached_property
    def root(self) -> Path:
        """``results_dir`` made absolute, once per store: resolving it walks every folder of the path
        (a ``readlink`` each), and a stage asks for it twice per question file it reads or writes."""
        return Path(self.results_dir).resolve()

    @property
    def parquet_root(self) -> Path:
        return self.root / "parquet"

    @property
    def catalog_path(self) -> Path:
        return self.root / CATALOG_NAME

    # ---- paths -------------------------------------------------------------------------
    def canonical_path(self, dataset: str, table: str) -> Path:
        return self.parquet_root / "canonical" / dataset / f"{table}.parquet"

    def partition_path(self, stage: str, key: str) -> Path:
        return self.parquet_root / stage / f"{key}.parquet"

    # ---- write / read ------------------------------------------------------------------
    def write(self, path: Path, table: pa.Table) -> None:
        write_parquet_atomic(path, table)

    def write_partition(self, stage: str, key: str, table: pa.Table) -> None:
        write_parquet_atomic(self.partition_path(stage, key), table, PARTITION_COMPRESSION)

    def read_partition(self, stage: str, key: str, columns: list[str] | None = None) -> pa.Table | None:
        """One question's rows of a stage, None when it has no file.

        ``columns``: only those of them the file has, in that order (``unit_hash`` read from an older
        file's ``config_hash``). Why "the file has": files written by earlier versions may lack
        columns added since; a caller that names the columns it uses gets what reading the whole
        file would have given it for those, and a column the file lacks stays absent, as before.
        Why the schema from the open file: one open per read (the footer is parsed once).
        """
        path = self.partition_path(stage, key)
        if not path.exists():
            return None
        if columns is None:
            return with_unit_hash(read_parquet_file(path))
        with pq.ParquetFile(path, pre_buffer=False) as f:
            return with_unit_hash(f.read(columns=_present(columns, f.schema_arrow.names), use_threads=False))

    def canonical_parts(self, dataset: str, table: str) -> list[Path]:
        """The files of a canonical table of one dataset (``<table>.parquet`` or its ``<table>-NNNNN`` parts)."""
        folder = self.parquet_root / "canonical" / dataset
        return sorted(folder.glob(f"{table}.parquet")) + sorted(folder.glob(f"{table}-*.parquet"))

    def read_canonical(self, dataset: str, table: str) -> pa.Table | None:
        """A canonical table of one dataset (``<table>.parquet`` or its ``<table>-NNNNN`` parts)."""
        parts = self.canonical_parts(dataset, table)
        if not parts:
            return None
        return pa.concat_tables([pq.read_table(p) for p in parts], promote_options="default")

    # ---- SQL ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _pinned(self) -> Iterator[Path]:
        """A folder of hard links to every viewed Parquet file as it is now (``parquet/...`` in it).

        Why: DuckDB reads a file's footer when it binds a view and its row groups when it scans; a
        run renaming a new file over it in between made a query read half of each (measured:
        "Out of buffer", "Invalid data"). A link is the old inode (pipeline/store/catalog_files.py):
        replaced or retired files stay readable, unchanged, until the connection closes and the
        folder goes. No data is copied.
        """
        base = self.root / PINNED_DIR
        _remove_orphan_pins(base)
        folder = base / f"{os.getpid()}-{uuid.uuid4().hex}"
        try:
            folder.mkdir(parents=True)
            link_tree(self.parquet_root, folder / "parquet", UNVIEWED_DIRS)
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _existing_globs(self, files: Path, search: Path) -> dict[str, str]:
        """Table -> glob of its files under ``files/parquet``, RELATIVE to ``search``.

        Why relative: the views stored in ``results.duckdb`` must keep working when the results
        folder is copied or moved; DuckDB resolves a relative path against the working directory
        or ``file_search_path``, which every connection made here sets to ``search``.
        """
        found: dict[str, str] = {}
        parquet = self._parquet_glob_root(files, search)
        parquet_root = files / self.parquet_root.relative_to(self.root)
        for name, pattern in TABLE_GLOBS.items():
            if any(parquet_root.glob(pattern)):
                found[name] = f"{parquet}/{pattern}"
        return found

    def _parquet_glob_root(self, files: Path, search: Path) -> str:
        """The ``parquet`` folder under ``files`` as a path relative to ``search`` (see ``_existing_globs``):
        what every glob of the views over ``files`` starts with, the report views' own included."""
        prefix = files.relative_to(search).as_posix()
        prefix = "" if prefix == "." else f"{prefix}/"
        return f"{prefix}{self.parquet_root.relative_to(self.root).as_posix()}"

    def _create_views(
        self, con: duckdb.DuckDBPyConnection, files: Path | None = None, search: Path | None = None
    ) -> list[str]:
        """Every table's view over the files under ``files`` (default: the results folder), with
        globs relative to ``search`` (default: ``files``), which becomes the connection's search path."""
        files = files or self.root
        search = search or files
        con.execute("SET file_search_path = ?", [str(search)])
        globs = self._existing_globs(files, search)
        parquet = files / self.parquet_root.relative_to(self.root)
        for name, pattern in globs.items():
            uniform = same_schema(parquet.glob(TABLE_GLOBS[name]))
            plain = _source_sql(pattern, set(), uniform)
            con.execute(_view_sql(name, plain))
            source = _source_sql(pattern, _view_columns(con, name), uniform)
            if name in _KEY_FILL:
                try:
                    con.execute(_filled_view_sql(name, source))
                    continue
                except duckdb.BinderException:
                    pass  # only failure rows so far: some key columns do not exist yet
            if source != plain:
                con.execute(_view_sql(name, source))
        if "questions" in globs:
            con.execute(self._progress_sql(globs))
            con.execute(PROGRESS_SUMMARY_SQL)
        return sorted(globs)

    def _progress_sql(self, globs: dict[str, str]) -> str:
        """Keys: questions, load failures (keyless ones under a pseudo key) and failed datasets.

        Keyless load failures and failed datasets never reach the stage driver, so they are
        ``failed`` in every stage here (with the load error), never ``missing``: a rerun cannot
        fill them, only a fixed input file can.
        """
        parts = [
            "SELECT partition_key, 'canonical' AS stage, 'ok' AS status, NULL::VARCHAR AS error,"
            " NULL::DOUBLE AS duration_s, NULL::TIMESTAMP AS finished_at FROM questions"
        ]
        key_parts: list[str] = []
        unkeyed: list[str] = []  # (pseudo key, message) of keys no stage will ever see
        if "load_failures" in globs:
            parts.append(
                f"SELECT {LOAD_FAILURE_KEY_SQL}, 'canonical', 'failed', message, NULL, NULL FROM load_failures"
            )
            key_parts.append(f"SELECT dataset, {LOAD_FAILURE_KEY_SQL}, record_id FROM load_failures")
            unkeyed.append(
                f"SELECT {LOAD_FAILURE_KEY_SQL} AS k, message FROM load_failures WHERE partition_key IS NULL"
            )
        if "dataset_failures" in globs:
            parts.append(
                f"SELECT {DATASET_FAILURE_KEY_SQL}, 'canonical', 'failed', message, NULL, NULL FROM dataset_failures"
            )
            key_parts.append(f"SELECT dataset, {DATASET_FAILURE_KEY_SQL}, NULL FROM dataset_failures")
            unkeyed.append(f"SELECT {DATASET_FAILURE_KEY_SQL} AS k, message FROM dataset_failures")
            if "ingestion" in globs:  # questions of a dataset that failed on its first load: failed rows only
                first_load = (
                    "FROM ingestion i JOIN dataset_failures f USING (dataset) "
                    "WHERE i.partition_key NOT IN (SELECT partition_key FROM questions)"
                )
                key_parts.append(f"SELECT DISTINCT i.dataset, i.partition_key, i.question_id {first_load}")
                # ... failed in canonical too, with the load error (not 'missing', as if a rerun could fill it)
                canonical = "SELECT DISTINCT i.partition_key, 'canonical', 'failed', f.message, NULL, NULL"
                parts.append(f"{canonical} {first_load}")
        parts += [
            f"SELECT partition_key, '{s}', status, error, duration_s, finished_at FROM \"{s}\""
            for s in STAGE_TABLES
            if s in globs
        ]
        if unkeyed:
            later = ", ".join(f"'{s}'" for s in STAGE_TABLES)
            parts.append(
                f"SELECT u.k, st.stage, 'failed', u.message, NULL, NULL FROM ({' UNION ALL '.join(unkeyed)}) u"
                f" CROSS JOIN (SELECT unnest([{later}]) AS stage) st"
            )
        failures = "".join(f" UNION ALL {p}" for p in key_parts)
        stages = "['canonical', " + ", ".join(f"'{s}'" for s in STAGE_TABLES) + "]"
        return PROGRESS_SQL.format(stage_union=" UNION ALL ".join(parts), failures_union=failures, stages=stages)

    @contextlib.contextmanager
    def connect(self, report_views: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
        """An in-memory DuckDB connection with every table as a view (never locks the catalog).

        The user's own database ``user.duckdb`` (next to ``results.duckdb``), when present, is
        attached read-only as ``user_db`` (skipped while another session holds it read-write).
        ``report_views=False``: the base tables' views only (and ``progress``), for a caller that
        reads nothing else: each report view binds its tables' files again when it is created.
        """
        with self._pinned() as pinned:
            yield from self._connect_on(pinned, report_views=report_views)

    def _connect_on(
        self,
        root: Path,
        before_report_views: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
        commented: bool = True,
        report_views: bool = True,
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """``commented``: with the views' ``COMMENT ON`` texts (for people and tools that list them);
        ``report_views``: with the report views (CATALOG_VIEWS) at all."""
        con = duckdb.connect(":memory:")
        try:
            self._create_views(con, root)
            if before_report_views is not None:
                before_report_views(con)
            if report_views:
                self._extra_views(con, self._parquet_glob_root(root, root), commented)
            trim_heap()  # binding the views over ~15k files leaves ~450 MB of freed heap (pipeline/util/heap.py)
            user_db = self.root / USER_DATABASE
            if user_db.exists():
                with contextlib.suppress(duckdb.Error):
                    con.execute(f"ATTACH '{user_db.as_posix()}' AS user_db (READ_ONLY)")
            yield con
        finally:
            con.close()

    @contextlib.contextmanager
    def snapshot(self, tables: tuple[str, ...] = SNAPSHOT_TABLES) -> Iterator[duckdb.DuckDBPyConnection]:
        """``connect()`` with ``tables`` (those that exist) read into memory once (SNAPSHOT_TABLES), and
        the report views of SNAPSHOT_VIEWS once their tables are.

        For a reader that queries the same views many times and wants one consistent state: files
        written after the copy are not seen, as in a single query.
        """
        with self.pinned_snapshot(tables) as snap:
            yield snap.con

    @contextlib.contextmanager
    def pinned_snapshot(self, tables: tuple[str, ...] = SNAPSHOT_TABLES) -> Iterator[Snapshot]:
        """``snapshot()`` with the folder of hard links its views read (see ``Snapshot``)."""

        def copy(con: duckdb.DuckDBPyConnection) -> None:
            con.execute(f"SET threads = {SNAPSHOT_THREADS}")
            present = _view_names(con)
            for name in tables:
                if name in present:
                    con.execute(f'CREATE TEMP TABLE "{name}" AS SELECT * FROM main."{name}"')
                    trim_heap()

        # copied before the report views are made: each of them binds against the copies, not
        # against every file's footer again (2,000 questions, ~8k files: 80 s of a report refresh).
        # No comments: only the report reads this connection, never them, and commenting binds
        # every view once more (duckdb_columns(); ~1.4 s of a 2,000-question run's end)
        with self._pinned() as pinned:
            for con in self._connect_on(pinned, copy, commented=False):
                _copy_views(con, SNAPSHOT_VIEWS)
                yield Snapshot(con, pinned / self.parquet_root.relative_to(self.root))

    def relink(self, snap: Snapshot, names: tuple[str, ...]) -> None:
        """Point the views ``names`` of ``snap`` at their files as they are now (hard links replaced in
        ``snap.parquet``, views made again), every other view unchanged.

        Why: the run's end writes the manifest's two tables from a snapshot's queries, then reports
        from that same snapshot; re-linking those two files costs nothing, a second snapshot or a
        second catalog rebuild ~8 s each at 2,000 questions. Only for plain base tables that no
        snapshot copy or view creator reads (the manifest's): a view built on them would keep
        whatever it bound when it was made.
        """
        for name in names:
            pattern = TABLE_GLOBS[name]
            for old in snap.parquet.glob(pattern):
                old.unlink()
            for live in self.parquet_root.glob(pattern):
                target = snap.parquet / live.relative_to(self.parquet_root)
                target.parent.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(FileNotFoundError):  # retired since it was listed
                    os.link(live, target)
            if any(snap.parquet.glob(pattern)):
                glob = f"{self.parquet_root.relative_to(self.root).as_posix()}/{pattern}"
                uniform = same_schema(snap.parquet.glob(pattern))
                snap.con.execute(_view_sql(name, _source_sql(glob, set(), uniform)))
            else:
                snap.con.execute(f'DROP VIEW IF EXISTS "{name}"')

    @contextlib.contextmanager
    def reader(self, as_written: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for read-only queries of the results' views.

        Why: ``connect()`` creates every view afresh, which binds each over its files (~6 s on
        the full configs/shared.yaml, ~15k files); the catalog ``results.duckdb`` already holds
        them and opens in milliseconds. So: the catalog, read-only, when it is current (built
        from exactly these files and untouched since); else, or when it cannot be opened (a
        session holds it read-write), ``connect()``. ``user_db`` is only attached by ``connect()``.

        ``as_written``: the catalog as its last rebuild wrote it, whatever was written since (for a
        caller that refreshed it after its own writes: its views read the files as they were at
        that rebuild, so what was written since is missing).
        """
        con = None
        current = self._catalog_as_written(None if as_written else self.catalog_fingerprint())
        if self.catalog_path.exists() and current is not None:
            with contextlib.suppress(duckdb.Error):
                con = open_catalog(self.catalog_path, read_only=True)
        if con is None:
            with self.connect() as fresh:
                yield fresh
            return
        try:
            yield con
        finally:
            con.close()

    def query(self, sql: str, params: list[object] | None = None) -> pa.Table:
        with self.connect() as con:
            return con.sql(sql, params=params).to_arrow_table()

    def refresh_catalog(self) -> list[str]:
        """Rebuild ``results.duckdb`` (temp file + rename). Returns the view names created.

        Tables and views a user created in the old file are copied into the new one; when they
        cannot be (file locked read-write by another session, macros, name clashes) the old file
        is kept as it is, a warning names why, and ``[]`` is returned (pipeline.catalog.views).

        Kept as it is when nothing it is built from changed since it was built (see
        ``catalog_fingerprint``) and the file is exactly as it was written: rebuilding takes ~6 s
        on the full shared benchmark and every stage of a run refreshes the catalog.

        Coalesced across processes (pipeline/util/coalesce.py): a caller that waited while another
        rebuilt it from a state that already held this caller's files takes that catalog as it is.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        return Coalescer(self.root, CATALOG_WORK).run(self._refresh_catalog_now, self._catalog_as_written)

    def _refresh_catalog_now(self) -> list[str]:
        fingerprint = self.catalog_fingerprint()
        kept = self._catalog_if_current(fingerprint)
        if kept is not None:
            return kept
        (self.root / CATALOG_MARK).unlink(missing_ok=True)
        views, files = self._rebuild_catalog()
        if views:
            st = self.catalog_path.stat()
            mark = {"fingerprint": fingerprint, "catalog": [st.st_size, st.st_mtime_ns], "views": views, "files": files}
            (self.root / CATALOG_MARK).write_text(json.dumps(mark))
            retire_superseded(self.root, files)
        return views

    def catalog_fingerprint(self) -> str:
        """Hash of what the catalog's views are built from.

        Every Parquet file under ``parquet/`` except the stage indexes (path, size, mtime: files
        are only replaced by atomic rename), the pipeline code, the registered view creators, the
        DuckDB version and the catalog storage version.
        """
        h = hashlib.sha256(f"{duckdb.__version__}|{CATALOG_STORAGE_VERSION}|{view_creator_names(self.views)}".encode())
        update_with_files(h, pipeline_code_files() + parquet_files(self.parquet_root, UNVIEWED_DIRS))
        return h.hexdigest()

    def _catalog_as_written(self, fingerprint: str | None = None) -> list[str] | None:
        """The catalog's views when the file is exactly as its last rebuild wrote it.

        ``fingerprint``: and only when that rebuild was made from these inputs. A write-ahead log
        next to it (a session is writing), or any change to the file (a user's own table), means a
        rebuild, which carries the user's objects over or refuses loudly.
        """
        try:
            saved = json.loads((self.root / CATALOG_MARK).read_text())
            st = self.catalog_path.stat()
        except (FileNotFoundError, ValueError):
            return None
        if Path(f"{self.catalog_path}.wal").exists() or saved.get("catalog") != [st.st_size, st.st_mtime_ns]:
            return None
        if not saved.get("files") or not (self.root / CATALOG_FILES_DIR / saved["files"]).is_dir():
            return None  # built over the live files (an earlier version), or its files were removed
        if fingerprint is not None and saved.get("fingerprint") != fingerprint:
            return None
        return list(saved.get("views", []))

    def _catalog_if_current(self, fingerprint: str) -> list[str] | None:
        """The views of the current catalog when it was built from these inputs and not touched since."""
        return self._catalog_as_written(fingerprint)

    def _rebuild_catalog(self) -> tuple[list[str], str]:
        """Build the catalog under a temp name over a new fixed set of the files (hard links,
        pipeline/store/catalog_files.py) and rename it over the old one (see refresh_catalog).
        Returns the views and the name of that set's folder."""
        files = new_folder(self.root)
        fd, tmp_name = tempfile.mkstemp(prefix=".catalog-", suffix=".duckdb", dir=self.root)
        os.close(fd)
        tmp = Path(tmp_name)
        tmp.unlink()
        built = False
        try:
            link_tree(self.parquet_root, files / "parquet", UNVIEWED_DIRS)
            con = duckdb.connect(str(tmp), config={"storage_compatibility_version": CATALOG_STORAGE_VERSION})
            try:
                con.execute(METADATA_CACHE_SQL)
                views = self._create_views(con, files, self.root)
                if "progress" in _view_names(con):
                    views += ["progress", "progress_summary"]
                views += self._extra_views(con, self._parquet_glob_root(files, self.root))
                keep_user_objects(con, self.catalog_path)  # a user's own tables survive the rebuild
            finally:
                con.close()
            os.link(tmp, files / CATALOG_LINK)  # who has this catalog open is asked through it
            os.replace(tmp, self.catalog_path)
            built = True
        except CatalogKept as exc:  # locked read-write, or objects we cannot copy: never drop them
            _log.warning("results catalog not rebuilt: %s", exc)
            return [], ""
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            with contextlib.suppress(FileNotFoundError):
                Path(str(tmp) + ".wal").unlink()
            if not built:
                shutil.rmtree(files, ignore_errors=True)
        return views, files.name

    def _extra_views(self, con: duckdb.DuckDBPyConnection, parquet: str, commented: bool = True) -> list[str]:
        """The report views of ``views`` (pipeline.catalog.views.CATALOG_VIEWS) and, when ``commented``,
        the catalog's comments. ``parquet``: the base views' Parquet folder (``_parquet_glob_root``), so that
        a report view reading files itself reads the same fixed set."""
        creators = self.views if commented else tuple(v for v in self.views if v is not comment_views)
        return create_report_views(con, parquet, creators)


def open_catalog(path: str | Path, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """Open a ``results.duckdb`` from any working directory (its views hold relative paths)."""
    p = Path(path).resolve()
    con = duckdb.connect(str(p), read_only=read_only)
    con.execute("SET file_search_path = ?", [str(p.parent)])
    return con


def _view_columns(con: duckdb.DuckDBPyConnection, view: str) -> set[str]:
    """A view's column names, as bound when it was created (no second read of its files)."""
    return {
        r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = ?", [view]).fetchall()
    }


def _remove_orphan_pins(base: Path) -> None:
    """Remove pinned folders whose process is gone (a reader killed with its connection open)."""
    if not base.is_dir():
        return
    for folder in base.iterdir():
        pid = folder.name.split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _copy_views(con: duckdb.DuckDBPyConnection, names: tuple[str, ...]) -> None:
    """Each of the views ``names`` that exists read once into a temp table of the same name (it shadows
    the view, also inside the views built on it)."""
    present = _view_names(con)
    for name in names:
        if name in present:
            con.execute(f'CREATE TEMP TABLE "{name}" AS SELECT * FROM main."{name}"')


def _view_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
