"""The manifest's two tables (``run_manifest``, ``integrity_flags``): columns and their meaning.

Why apart from pipeline/provenance/manifest.py: the catalog docs (pipeline/catalog/docs.py) need the text,
and importing the manifest builder would load the judges and readers for it.
"""

from __future__ import annotations

import pyarrow as pa

MANIFEST_DIR = "manifest"  # under parquet/: run_manifest.parquet and integrity_flags.parquet
MANIFEST_JSON = "manifest.json"  # in the results folder (pipeline/provenance/manifest.py)
MANIFEST_TABLES = ("run_manifest", "integrity_flags")  # the views over MANIFEST_DIR's two files

FLAG_SLICED = "sliced"
FLAG_FULL_HAYSTACK = "full_haystack"
FLAG_FAILED = "failed_questions"
FLAG_ISOLATION_LEAK = "isolation_leak"  # membench check-isolation found another haystack's canary

DATASET_SCHEMA = pa.schema(
    [
        ("config", pa.string()),
        ("generated_at", pa.string()),
        ("package_version", pa.string()),
        ("git_commit", pa.string()),
        ("dataset", pa.string()),
        ("loader", pa.string()),
        ("path", pa.string()),
        ("file_bytes", pa.int64()),
        ("sha256", pa.string()),
        ("records_sha256", pa.string()),
        ("release", pa.string()),
        ("release_source", pa.string()),
        ("release_match", pa.string()),
        ("n_questions_file", pa.int64()),
        ("n_questions_loaded", pa.int64()),
        ("sliced", pa.bool_()),
    ]
)
FLAG_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("system", pa.string()),
        ("flag", pa.string()),
        ("n_affected", pa.int64()),
        ("n_of", pa.int64()),
        ("message", pa.string()),
    ]
)

VIEW_DOCS: dict[str, str] = {
    "run_manifest": "per dataset file of the run: sha256, the official release it matches, slice, code version "
    "(manifest.json)",
    "integrity_flags": "what qualifies a number: a sliced dataset, failed questions, retrieval that ranked the "
    "whole haystack, a memory that leaked across haystacks",
}

VIEW_COLUMNS: dict[str, dict[str, str]] = {
    "run_manifest": {
        "config": "config name (the Dagster scope)",
        "generated_at": "when manifest.json was written (UTC)",
        "package_version": "membench package version",
        "git_commit": "git commit of the code (NULL outside a git checkout)",
        "loader": "registered dataset loader",
        "path": "dataset file as the config gives it",
        "file_bytes": "size of the dataset file",
        "sha256": "sha256 of the dataset file's bytes",
        "records_sha256": "sha256 of the file's records (order- and format-independent)",
        "release": "the known official release the file matches (NULL: none known)",
        "release_source": "where that release is published",
        "release_match": "how it matched: file (byte-exact) or records (same records, other order or format)",
        "n_questions_file": "questions in the file",
        "n_questions_loaded": "questions loaded into the canonical tables",
        "sliced": "the config slices the dataset (limit, limit_per_type or question_ids)",
    },
    "integrity_flags": {
        "system": "memory system name (NULL: the flag is about the dataset)",
        "flag": "sliced, failed_questions, full_haystack (top_k >= haystack: retrieval equals full context) or "
        "isolation_leak (membench check-isolation: another haystack's canary came back)",
        "n_affected": "questions the flag applies to",
        "n_of": "out of this many (questions in the file, in the run, or retrieved)",
        "message": "the flag as the report shows it",
    },
}
