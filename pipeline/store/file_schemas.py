"""Whether every Parquet file of a fixed set has one schema: then DuckDB may bind a view over them
from the first file's footer alone.

Why: ``read_parquet(glob, union_by_name = true)`` reads every file's footer each time a view over
it is bound, and DuckDB binds a base view again for every view created on it. At a run's end
(2,000 questions, ~8k per-question files) the report's snapshot and the catalog rebuild spent
~8 s CPU each doing so; with ``union_by_name = false`` a bind reads one footer (DuckDB 2.0.1:
0.2 s vs 0.01 s per 2,000-file stage folder). But ``union_by_name = false`` takes the first file's
columns for all: a later file missing a column fails the scan, one with an extra column loses it
silently. So it is only used where every file's schema is the same, checked here.

Only for files that never change under the view (the hard links of pipeline/store/catalog_files.py):
a check made when the view is made then holds for its whole life.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pipeline.util.footer_memo import FooterMemo
from pipeline.util.schema_bytes import footer_bytes, schema_prefix


def fingerprint(path: Path | str) -> bytes:
    """What DuckDB binds from a Parquet file's footer: its Parquet schema (names, order, physical and
    logical types, repetition, nesting, field ids), as the footer's bytes hold it
    (pipeline/util/schema_bytes.py).

    Why the bytes and not pyarrow's decoded footer: a footer that starts with a schema already seen
    has that schema (one ``startswith`` against the few distinct ones), where pyarrow decodes every
    row group's statistics too (~0.17 ms CPU a file, ~1.3 s of a 2,000-question run's end). The
    key-value metadata (``ARROW:schema``) is not part of it: DuckDB's Parquet reader binds the
    columns from the schema alone (2.0.1 holds no reader of ``ARROW:schema``).
    """
    footer = footer_bytes(path)
    # the newest first (a folder's files follow each other); a copy, as another thread may add one
    for known in reversed(tuple(_DISTINCT)):
        if footer.startswith(known):
            return known
    text = schema_prefix(footer)
    return _DISTINCT.setdefault(text, text)


_DISTINCT: dict[bytes, bytes] = {}  # each distinct schema's bytes kept once (thousands of files share a few)
MAX_REMEMBERED = 200_000  # entries, ~40 MB at most
# each file's schema fingerprint (looked up by name at each read, so a test may count the reads)
_FINGERPRINTS: FooterMemo[bytes] = FooterMemo(lambda path: fingerprint(path), MAX_REMEMBERED, _DISTINCT.clear)


def same_schema(files: Iterable[Path]) -> bool:
    """True when every file of ``files`` has the same fingerprint (also for one file, or none)."""
    first: bytes | None = None
    for path in files:
        found = _FINGERPRINTS.get(path)
        if first is None:
            first = found
        elif found != first:
            return False
    return True
