"""Read the expected figures in tests/data/official/ (format: tests/data/official/README.md).

A figures file holds what a benchmark's own scoring code produced on membench's parity inputs,
computed outside this repository. Loading one checks its header, so a file that does not say
where its numbers came from cannot be used by a test.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.paths import OFFICIAL_DIR

FORMAT = "membench-official-figures/1"
KIND_FIGURES = "figures"  # per-question values of official scoring code (the default kind)
KIND_CODE_FINGERPRINTS = "code_fingerprints"  # shingle hashes of official functions (tests/tree/provenance_rules.py)
REQUIRED_HEADER = ("format", "benchmark", "official_functions", "produced_by", "produced_on", "environment", "fields",
                   "counts")  # fmt: skip
REQUIRED_BY_KIND = {
    KIND_FIGURES: ("official_repository", "official_commit", "official_licence", "dataset", "inputs", "inputs_sha256"),
    KIND_CODE_FINGERPRINTS: ("sources",),
}


def _check_commit(name: str, commit: object) -> None:
    text = str(commit)
    if len(text) != 40 or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"{name}: commit {text!r} is not a full commit id")


def check_header(header: dict[str, Any], name: str) -> None:
    """Raise when a header field is missing or a commit is not a full 40-hex id."""
    kind = header.get("kind", KIND_FIGURES)
    if kind not in REQUIRED_BY_KIND:
        raise ValueError(f"{name}: header kind {kind!r}, expected one of {sorted(REQUIRED_BY_KIND)}")
    missing = [key for key in REQUIRED_HEADER + REQUIRED_BY_KIND[kind] if not header.get(key)]
    if missing:
        raise ValueError(f"{name}: header lacks {missing}")
    if header["format"] != FORMAT:
        raise ValueError(f"{name}: header format {header['format']!r}, expected {FORMAT!r}")
    if kind == KIND_FIGURES:
        _check_commit(name, header["official_commit"])
        if not {"file", "sha256"} <= set(header["dataset"]):
            raise ValueError(f"{name}: header dataset needs 'file' and 'sha256'")
    else:
        for source in header["sources"]:
            if not {"repository", "commit", "licence", "files"} <= set(source):
                raise ValueError(f"{name}: each source needs repository, commit, licence, files")
            _check_commit(name, source["commit"])


def load_figures(name: str) -> dict[str, Any]:
    """The parsed file ``tests/data/official/<name>``, header checked."""
    data: dict[str, Any] = json.loads((OFFICIAL_DIR / name).read_text(encoding="utf-8"))
    check_header(data.get("header") or {}, name)
    return data
