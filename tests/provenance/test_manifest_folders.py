"""Datasets read from several files (BEAM's tier folder, LoCoMo-Plus's two files): the manifest hashes
them together, and ``membench verify`` rechecks that hash and names a changed file's dataset."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline.config.model import BenchmarkConfig, DatasetConfig
from pipeline.provenance.manifest import dataset_entries
from pipeline.provenance.verify import MISMATCH, OK, dataset_checks
from tests.support.paths import SAMPLE_DATA


def test_folder_datasets_are_hashed_and_verified(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE_DATA / "beam" / "100K", tmp_path / "100K")
    shutil.copytree(SAMPLE_DATA / "locomo_plus", tmp_path / "locomo_plus")
    cfg = BenchmarkConfig(datasets=(
        DatasetConfig(name="beam", loader="beam", path=str(tmp_path / "100K")),
        DatasetConfig(name="plus", loader="locomo_plus", path=str(tmp_path / "locomo_plus" / "locomo_plus.json")),
    ))  # fmt: skip
    entries = dataset_entries(cfg, {"beam": 15, "plus": 4}, None)
    beam, plus = entries
    assert (
        beam["error"] is None and beam["n_files"] == 4 and len(beam["sha256"]) == 64
    )  # chat 2: its chat_trunecated.json only
    assert plus["n_files"] == 2 and plus["file_bytes"] > 0
    checks = dataset_checks({"datasets": entries})
    assert [c.status for c in checks] == [OK, OK]
    chat = tmp_path / "100K" / "1" / "chat.json"
    chat.write_text(chat.read_text().replace("Flask", "Django", 1))
    again = dataset_checks({"datasets": entries})
    assert [c.status for c in again] == [MISMATCH, OK]
    assert (
        str(tmp_path / "100K") in again[0].message
        and "differs from manifest.json datasets[0].sha256" in again[0].message
    )
