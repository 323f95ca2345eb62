"""Integrity flags from a results folder with failures (pipeline/provenance/manifest.py integrity_flags).

The report fixture store (tests/support/report.py) has failed answers and judgments: the
``failed_questions`` flag must count exactly the questions ``progress`` marks failed, and a sliced
dataset whose file could not be read says so instead of inventing a total.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.catalog.manifest import FLAG_FAILED, FLAG_SLICED
from pipeline.config.model import BenchmarkConfig, DatasetConfig
from pipeline.provenance.manifest import failed_counts, hash_dataset_file, integrity_flags
from tests.support.report import LOADERS, build_full_store


def test_failed_and_sliced_flags(tmp_path: Path) -> None:
    store = build_full_store(tmp_path / "results")
    cfg = BenchmarkConfig(
        datasets=tuple(DatasetConfig(name=n, loader=lo, path="unused.json", limit=2) for n, lo in LOADERS.items())
    )
    missing = hash_dataset_file(tmp_path / "unused.json")
    assert missing["sha256"] is None and "unused.json" in missing["error"]
    entries = [
        {"dataset": n, "sliced": True, "limit": 2, "limit_per_type": None, "n_questions_loaded": 2, **missing}
        for n in LOADERS
    ]
    with store.connect() as con:
        failed = failed_counts(con)
        expected = con.execute(
            "SELECT dataset, count(DISTINCT partition_key) FROM progress WHERE status = 'failed' GROUP BY dataset"
        ).fetchall()
        flags = integrity_flags(con, cfg, entries)
    assert expected and {d: n for d, n in expected} == {d: f for d, (f, _) in failed.items() if f}
    got = {(f["dataset"], f["flag"]): f for f in flags}
    for dataset, n in expected:
        flag = got[(dataset, FLAG_FAILED)]
        assert flag["n_affected"] == n and flag["system"] is None
        assert flag["message"].startswith(f"failed questions: {n} of {flag['n_of']}")
    for dataset in LOADERS:
        assert got[(dataset, FLAG_SLICED)]["message"] == "sliced: 2 of ? questions (limit: 2)"
