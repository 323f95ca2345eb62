"""A run's end: its manifest, the catalog and the report, with the catalog rebuilt once.

Why: done one after the other (``write_manifest``, then ``refresh_report_files``), a run's end
rebuilt the catalog twice, because the manifest reads the views and then writes two tables the
catalog is built from, and bound every view over every file three times (catalog, catalog again,
the report's snapshot), while the manifest's queries read every per-question file once more. At
2,000 questions that was ~38 s CPU of a ~64 s run (docs/design/speed.md). Here the manifest is
computed on the report's snapshot (its ``progress`` and accuracy queries read the snapshot's
in-memory copies), its two new files are linked into that snapshot, the report is built from the
same snapshot, and the catalog is rebuilt once, over the files as they are after the manifest.
"""

from __future__ import annotations

from typing import Any

from pipeline.catalog.manifest import MANIFEST_TABLES
from pipeline.config.specs import Benchmark
from pipeline.provenance.manifest import manifest_to_write, write_manifest_from
from pipeline.report.refresh import build_report, refresh_report_files, report_outcome
from pipeline.store.results import ResultStore


def refresh_run_end(bench: Benchmark[Any, Any, Any], store: ResultStore) -> str:
    """``write_manifest`` then ``refresh_report_files``, the same files written; says what it did.

    When the manifest is current (nothing it is built from changed) there is nothing to share:
    the report refresh alone, which snapshots the results only when the report is not current.
    """
    fingerprint = manifest_to_write(bench, store)
    if fingerprint is None:
        return refresh_report_files(store)
    with store.pinned_snapshot() as snap:
        _, changed = write_manifest_from(bench, store, snap.con, fingerprint)
        if changed:  # the report shows the flags just written, as the catalog's views read them
            store.relink(snap, MANIFEST_TABLES)
        data, rewritten = build_report(store, snap=snap)
    # after the snapshot is closed, so that its copies and the rebuild's footer cache are never held
    # together; the report files are no input of the catalog
    store.refresh_catalog()
    return report_outcome(store, data, rewritten)
