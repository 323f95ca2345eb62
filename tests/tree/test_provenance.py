"""Provenance: everything in membench is written here (docs/design/third_party.md).

Three guards, each on the whole tree a clean clone holds:
- no function shares most of its token shingles with a function of the official code of the
  benchmarks membench follows (hashes in tests/data/official/code_fingerprints.json): a copy,
  renamed or lightly edited, shares 54-78 % of them (measured on the copies these tests replaced),
  membench's own implementations of the same definitions at most 22 %;
- no function is named like a test oracle standing in for another project's code (``off_*``,
  ``official_*``), the pattern of those copies;
- no file carries a notice that code in it came from another project.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import pytest

from tests.support.official_figures import load_figures
from tests.support.paths import PROJECT_ROOT
from tests.tree.provenance_rules import FunctionUnit, containment, function_units

ROOT = PROJECT_ROOT
CODE_DIRS = ("pipeline", "assets", "resources", "tests", "benchmarks", "scripts", "examples", "configs", "docs")
TOP_FILES = ("README.md", "pyproject.toml", "workspace.yaml")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".sh", ".txt", ".cfg", ".ini", ".html", ".j2"}
SKIP_PARTS = {"__pycache__", "data", ".venv", "node_modules"}  # tests/data holds figures, not prose
MIRROR_LIMIT = 0.4  # share of an official function's shingles that makes a function a copy

# the oracle-copy naming pattern; each word written so that this file does not match itself
ORACLE_NAME = re.compile(r"^_?(?:o[f]f|o[f]ficial)_\w+$")
NOTICE = re.compile(
    r"(?:co[p]ied|e[m]bedded|ta[k]en|po[r]ted|ad[a]pted|li[f]ted|re[p]roduced)\s+(?:verbatim\s+)?"
    r"(?:from\s+(?:the\s+)?(?:o[f]ficial|https?://|github|[\w.-]+/[\w.-]+)|here\b|as\s+an?\s+(?:oracle|reference))"
    r"|(?:code|functions?|oracle|scorer|implementation)\s+(?:is\s+|are\s+)?(?:co[p]ied|e[m]bedded|vendored)\b",
    re.IGNORECASE,
)


def _files(suffixes: set[str]) -> Iterator[Path]:
    for name in TOP_FILES:
        if (ROOT / name).suffix in suffixes and (ROOT / name).exists():
            yield ROOT / name
    for folder in CODE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in suffixes and not SKIP_PARTS & set(path.relative_to(ROOT).parts):
                yield path


@lru_cache(maxsize=1)
def _our_functions() -> tuple[tuple[str, FunctionUnit], ...]:
    out = []
    for path in _files({".py"}):
        for unit in function_units(path.read_text(encoding="utf-8")):
            out.append((str(path.relative_to(ROOT)), unit))
    return tuple(out)


def test_the_scan_sees_the_tree() -> None:
    files = {name for name, _ in _our_functions()}
    assert {"pipeline/judges/locomo.py", "pipeline/metrics/retrieval.py", "tests/tree/test_provenance.py"} <= files
    assert len(_our_functions()) > 1000


def test_no_function_mirrors_official_code() -> None:
    official = load_figures("code_fingerprints.json")["functions"]
    assert len(official) >= 50
    copies = []
    for name, unit in _our_functions():
        for fn in official:
            share = containment(frozenset(fn["shingles"]), unit.shingles)
            if share >= MIRROR_LIMIT:
                copies.append(f"{name}:{unit.lineno} {unit.qualname} ~ {fn['path']}:{fn['function']} ({share:.0%})")
    assert not copies, "functions that mirror official code:\n" + "\n".join(copies)


def test_no_function_is_named_like_an_oracle_copy() -> None:
    named = [f"{name}:{u.lineno} {u.qualname}" for name, u in _our_functions()
             if ORACLE_NAME.match(u.qualname.rsplit(".", 1)[-1])]  # fmt: skip
    assert not named


def test_no_file_carries_a_copy_notice() -> None:
    hits = []
    for path in _files(TEXT_SUFFIXES):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if NOTICE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "copy notices:\n" + "\n".join(hits)


@pytest.mark.parametrize(  # the flagged examples spell one letter as an escape, so this file stays clean
    ("line", "flagged"),
    [
        ("The oracle below is LongMemEval's own scoring, e\u006dbedded as a reference (MIT licence):", True),
        ("They are e\u006dbedded here only as a test reference", True),
        ("# co\u0070ied from snap-research/locomo task_eval/evaluation.py", True),
        ("code ta\u006ben verbatim from the official repository", True),
        ("A\u0064apted from https://github.com/mem0ai/mem0", True),
        ("the oracle functions are co\u0070ied", True),
        ("vectors copied from {embeddings_dir(store.root)}", False),
        ("Tables are copied with their rows, views re-created from their SQL.", False),
        ("texts embedded once and cached by (model variant, sha256(text))", False),
        ("mem0's ACCURACY_PROMPT byte for byte (protocol text, Apache-2.0)", False),
    ],
)
def test_notice_pattern(line: str, flagged: bool) -> None:
    assert bool(NOTICE.search(line)) is flagged


@pytest.mark.parametrize(
    ("name", "flagged"),
    [("off_f1_score", True), ("_off_dcg", True), ("official_ndcg", True), ("offset", False),
     ("locomo_adversarial_official", False), ("oracle_store", False), ("offline_reader", False)],
)  # fmt: skip
def test_oracle_name_pattern(name: str, flagged: bool) -> None:
    assert bool(ORACLE_NAME.match(name)) is flagged
