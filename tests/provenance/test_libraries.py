"""The installed versions the run manifest records (pipeline/provenance/libraries.py): those of this
process, read from the installed distributions, and Hindsight's from its server's own virtualenv."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy
import torch

from pipeline.provenance.libraries import HINDSIGHT_DISTRIBUTION, LIBRARIES, library_versions


def test_the_libraries_of_this_process_at_their_installed_versions() -> None:
    versions = library_versions()
    assert versions["numpy"] == numpy.__version__ and versions["duckdb"] == duckdb.__version__
    assert versions["torch"] == torch.__version__  # 2.13.0+cpu: the local build label kept
    assert set(versions) <= set(LIBRARIES) and {"bm25s", "nltk", "openai", "dagster", "sentence-transformers"} <= set(
        versions
    )


def test_hindsight_is_read_from_its_server_venv(tmp_path: Path) -> None:
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "hindsight_api_slim-1.1.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {HINDSIGHT_DISTRIBUTION}\nVersion: 1.1.0\n")
    assert library_versions([tmp_path / "venv"])[HINDSIGHT_DISTRIBUTION] == "1.1.0"
    assert HINDSIGHT_DISTRIBUTION not in library_versions([tmp_path / "no-venv"])
