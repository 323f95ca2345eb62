"""Pandera schemas of the canonical tables, run as blocking asset checks after loading.

Why: the canonical tables are the contract every later stage trusts; a loader bug (a null id, a
duplicate key, an out-of-range choice index) must stop the run at the stage boundary, before
any embedding or LLM money is spent on bad data.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pandera.errors
import pandera.pandas as pa
import pyarrow as pa_arrow
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.core.records import CANONICAL_TABLES, TABLES, Check, ColumnDef, TableDef

# pipeline.core.records declares every canonical table once (row dataclass + TableDef); its pandera
# schema is derived here, where pandera is imported (the loaders never import it).
_CHECKS: dict[str, Callable[..., pa.Check]] = {
    "ge": pa.Check.ge,
    "in_range": pa.Check.in_range,
    "isin": pa.Check.isin,
    "str_matches": pa.Check.str_matches,
}


def _check(check: Check) -> pa.Check:
    return _CHECKS[check.kind](*check.args)


def pandera_schema(table: TableDef) -> pa.DataFrameSchema:
    """The table's pandera schema: every column pandera can check, its checks, keys and frame checks."""
    columns = {
        c.name: pa.Column(
            c.pandera_dtype,
            [_check(k) for k in c.checks],
            nullable=c.nullable,
            unique=c.unique,
            coerce=c.coerce,
        )
        for c in table.columns
        if c.pandera_dtype is not None
    }
    return pa.DataFrameSchema(
        columns,
        checks=[pa.Check(f.fn, error=f.error) for f in table.frame_checks],
        unique=list(table.unique) or None,
        strict=False,
        name=table.name,
    )


CANONICAL_PANDERA: dict[str, pa.DataFrameSchema] = {t.name: pandera_schema(t) for t in CANONICAL_TABLES if t.asset}

# ---- validation in bounded memory ----------------------------------------------------------
# Uniqueness is the one check that spans rows of different batches: it is checked over the whole
# file by DuckDB (a streaming aggregate that spills to disk), every other check batch by batch.
UNIQUE_KEYS: dict[str, tuple[str, ...]] = {
    t.name: key for t in CANONICAL_TABLES if t.asset and (key := t.unique_key()) is not None
}
VALIDATE_BATCH_ROWS = 5_000  # measured on 1.5 M turns: 530 MB peak at 5k rows, 660 MB at 20k, same time
MAX_FAILURE_CASES = 20


@dataclass(frozen=True)
class TableValidation:
    """Outcome of validating one table file: rows checked and the first failure cases (if any)."""

    table: str
    path: str
    rows: int
    failure_cases: pd.DataFrame | None = None

    @property
    def passed(self) -> bool:
        return self.failure_cases is None


def _row_schema(table: str) -> pa.DataFrameSchema:
    """The table's schema minus its uniqueness constraints (checked over the whole file apart)."""
    schema = CANONICAL_PANDERA[table]
    unique_cols = {name: {"unique": False} for name, col in schema.columns.items() if col.unique}
    row = schema.update_columns(unique_cols) if unique_cols else copy.deepcopy(schema)
    row.unique = None
    return row


def _duplicates(path: Path, columns: tuple[str, ...]) -> pd.DataFrame | None:
    cols = ", ".join(f'"{c}"' for c in columns)
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET preserve_insertion_order = false")
        dupes = con.execute(
            f"SELECT {cols}, count(*) AS n FROM read_parquet(?) GROUP BY ALL HAVING count(*) > 1 "
            f"ORDER BY n DESC LIMIT {MAX_FAILURE_CASES}",
            [str(path)],
        ).fetch_df()
    finally:
        con.close()
    if dupes.empty:
        return None
    return pd.DataFrame(
        {
            "check": f"unique({', '.join(columns)})",
            "column": ", ".join(columns),
            "failure_case": dupes[list(columns)].astype(str).agg(" / ".join, axis=1),
            "index": None,
            "n": dupes["n"],
        }
    )


# ---- type, null and value checks on Arrow -----------------------------------------------------
# A column whose checks Arrow can decide (a str, bool or int column, not coerced, whose value
# checks are among ``_ARROW_CHECKS``; uniqueness is checked apart) is settled by its Arrow type,
# its null count and, for value checks, one vectorised pass: an Arrow string holds only str
# values, an Arrow bool or int64 without nulls reads as a pandas bool or int64 column. pandera
# checked such a column by converting every value to a Python object (every text of the turns
# table: 0.65 s of LongMemEval_S's 0.75 s check) and testing each one; the value checks of
# ``position`` and ``role`` were another pandera validation per 5,000-row batch (pass 10).
_ARROW_TYPES: dict[type, tuple[pa_arrow.DataType, ...]] = {
    str: (pa_arrow.string(), pa_arrow.large_string()),
    bool: (pa_arrow.bool_(),),
    int: (pa_arrow.int64(),),
}


def _ge(column: pa_arrow.ChunkedArray, low: int) -> bool:
    least = pc.min(column).as_py()
    return least is None or least >= low


def _in_range(column: pa_arrow.ChunkedArray, low: int, high: int) -> bool:
    bounds = pc.min_max(column).as_py()
    return bounds["min"] is None or (bounds["min"] >= low and bounds["max"] <= high)


def _isin(column: pa_arrow.ChunkedArray, values: list[str]) -> bool:
    return len(column) == 0 or bool(pc.all(pc.is_in(column, value_set=pa_arrow.array(values, column.type))).as_py())


# Check kind -> (the dtype it applies to, its test of a column without nulls): pandera's ``ge`` and
# ``in_range`` (both ends included) of an int column, ``isin`` of a str column. ``str_matches``
# stays with pandera (Python's ``re`` and Arrow's RE2 differ).
_ARROW_CHECKS: dict[str, tuple[type, Callable[..., bool]]] = {
    "ge": (int, _ge),
    "in_range": (int, _in_range),
    "isin": (str, _isin),
}


@dataclass(frozen=True)
class _ArrowColumn:
    """A column checked on Arrow: its pandera dtype, whether it may hold nulls, its value checks."""

    name: str
    dtype: type
    nullable: bool
    checks: tuple[Check, ...] = ()

    def passes(self, batch: pa_arrow.Table) -> bool:
        """True when pandera would pass this column of ``batch`` (a missing column never passes)."""
        if self.name not in batch.column_names:
            return False
        column = batch.column(self.name)
        if column.type not in _ARROW_TYPES[self.dtype] or not self._nulls_pass(column.null_count):
            return False
        return all(_ARROW_CHECKS[c.kind][1](column, *c.args) for c in self.checks)

    def settled_by(self, file: pq.ParquetFile, group: int) -> bool:
        """True when the file's metadata alone (Arrow type, the row group's null count) settles this
        column of row group ``group``: it then need not be read (a long text column is most of the file)."""
        names = file.schema_arrow.names
        if self.checks or self.name not in names:
            return False
        if file.schema_arrow.field(self.name).type not in _ARROW_TYPES[self.dtype]:
            return False
        chunk = file.metadata.row_group(group).column(names.index(self.name))
        stats = chunk.statistics
        return (
            chunk.path_in_schema == self.name
            and stats is not None
            and stats.has_null_count
            and self._nulls_pass(stats.null_count)
        )

    def _nulls_pass(self, nulls: int) -> bool:
        # a bool or int column with a null reads as pandas objects or floats, which pandera's dtype
        # refuses; a value check is decided here only without nulls (pandera skips them in checks)
        return nulls == 0 or (self.nullable and self.dtype is str and not self.checks)


def _on_arrow(column: ColumnDef) -> bool:
    """Whether Arrow decides every check of ``column`` (its dtype, nulls and value checks)."""
    if column.pandera_dtype not in _ARROW_TYPES or column.coerce:
        return False
    return all(c.kind in _ARROW_CHECKS and _ARROW_CHECKS[c.kind][0] is column.pandera_dtype for c in column.checks)


def _arrow_columns(table: str) -> tuple[_ArrowColumn, ...]:
    """The table's columns checked on Arrow; none for a table with cross-column checks (they read
    any column of the frame)."""
    tdef = TABLES[table]
    if tdef.frame_checks:
        return ()
    return tuple(_ArrowColumn(c.name, c.pandera_dtype, c.nullable, c.checks) for c in tdef.columns if _on_arrow(c))


@dataclass(frozen=True)
class _BatchChecker:
    """A table's row schema, and the same split into Arrow checks and a pandera schema of the rest.

    A batch that passes both parts passes the whole schema; any other batch is checked by the whole
    schema, so a failure is reported exactly as pandera reports it (same cases, same row indices).
    """

    schema: pa.DataFrameSchema
    arrow: tuple[_ArrowColumn, ...]
    rest: pa.DataFrameSchema

    @classmethod
    def of(cls, table: str) -> _BatchChecker:
        schema = _row_schema(table)
        arrow = _arrow_columns(table)
        fast = {c.name for c in arrow}
        return cls(schema, arrow, schema.select_columns([n for n in schema.columns if n not in fast]))

    def settled(self, file: pq.ParquetFile, group: int) -> frozenset[str]:
        """The Arrow-checked columns of row group ``group`` that its metadata settles (left unread)."""
        return frozenset(c.name for c in self.arrow if c.settled_by(file, group))

    def passes(self, batch: pa_arrow.Table, settled: frozenset[str]) -> bool:
        """True when the whole schema would pass ``batch`` (its ``settled`` columns left unread);
        False means "check it with the whole schema", not "it fails"."""
        if not self.arrow:
            return False
        if not all(c.name in settled or c.passes(batch) for c in self.arrow):
            return False
        if not self.rest.columns:
            return True
        df = batch.select([n for n in self.rest.columns if n in batch.column_names]).to_pandas()
        try:
            self.rest.validate(df, lazy=True)
        except pandera.errors.SchemaErrors:
            return False  # reported by the whole schema
        return True

    def failure_cases(self, batch: pa_arrow.Table, first_row: int) -> pd.DataFrame | None:
        """The whole schema's failure cases of ``batch`` (rows ``first_row``... of the file), None when it passes."""
        df = batch.to_pandas()
        df.index = pd.RangeIndex(first_row, first_row + len(df))
        try:
            self.schema.validate(df, lazy=True)
        except pandera.errors.SchemaErrors as exc:
            return exc.failure_cases.head(MAX_FAILURE_CASES)
        return None


def validate_table_file(path: Path, table: str, batch_rows: int = VALIDATE_BATCH_ROWS) -> TableValidation:
    """Validate one canonical Parquet file against its pandera schema, ``batch_rows`` at a time.

    Why batches: ``to_pandas()`` of a LongMemEval_M-scale turns table (1.5 M turns) needed 4.6 GB;
    checking every row in batches gives the same guarantees (every row is checked, uniqueness
    over the whole file) with memory bounded by one batch. Columns the schema does not name are
    not read; columns whose check is their type and nulls are checked on Arrow (``_BatchChecker``).
    ``failure_cases`` holds at most ``MAX_FAILURE_CASES`` rows, with row indices relative to the
    whole file.
    """
    checker = _BatchChecker.of(table)
    file = pq.ParquetFile(path)
    wanted = [c for c in file.schema_arrow.names if c in checker.schema.columns]
    rows = 0
    cases: list[pd.DataFrame] = []
    for i in range(file.num_row_groups):  # one row group at a time: see pipeline/util/row_groups.py
        settled = checker.settled(file, i)
        group = file.read_row_group(i, columns=[c for c in wanted if c not in settled])
        whole = group if not settled else None  # every wanted column: read only for a batch to report
        for start in range(0, group.num_rows, batch_rows):
            batch = group.slice(start, batch_rows)
            if checker.passes(batch, settled):
                rows += batch.num_rows
                continue
            whole = whole if whole is not None else file.read_row_group(i, columns=wanted)
            failed = checker.failure_cases(whole.slice(start, batch_rows), rows)
            rows += batch.num_rows
            if failed is not None:
                cases.append(failed)  # the first bad batch is enough to fail the check and show what is wrong
                break
        if cases:
            break
    unique = UNIQUE_KEYS.get(table)
    if unique and not cases:
        dupes = _duplicates(path, unique)
        if dupes is not None:
            cases.append(dupes)
    if not cases:
        return TableValidation(table, str(path), rows)
    return TableValidation(table, str(path), rows, pd.concat(cases, ignore_index=True).head(MAX_FAILURE_CASES))
