"""Rankings of ``flat_bm25`` and ``flat_dense`` equal LongMemEval's own rankings, question by question.

The expected rankings are figures, not code: tests/data/official/longmemeval_s_flat_bm25.json holds,
for every LongMemEval_S record and both granularities, hashes of the ranking that
xiaowu0162/LongMemEval's ``src/retrieval/run_retrieval.py`` produced when run outside this
repository (its header says how). membench ranks the same records through its own loader and the
memory system's own ``ingest_session``/``retrieve`` and must give the same corpus index at every
position of the whole ranking: 0 differences. Ties are frequent (a BM25 score of 0, equal
sessions), so this also pins the tie order.

``flat_dense`` (protocol ``contriever``: mean pooling, no normalisation, inner product) is compared
with the official ``flat-contriever`` branch run with the all-MiniLM-L6-v2 weights as a plain
transformers folder (tests/data/official/longmemeval_s_flat_dense_minilm.json). Each record is
embedded anew (about a minute or more here), so this test ranks the first DENSE_RANKED stored records
and checks the inputs of all of them; benchmarks/official_retrievers.py --dense 0 ranks every stored
record. Needs ../shared/datasets.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pipeline.memory.base import MemoryDeps
from pipeline.memory.flat_bm25 import FlatBm25Memory
from pipeline.memory.flat_corpus import FlatMemory
from pipeline.memory.flat_dense import FlatDenseMemory, link_plain_model
from pipeline.memory.flat_offline import build, lme_items
from tests.support.memory import minilm_path
from tests.support.official_figures import load_figures
from tests.support.parity_inputs import inputs_digest, lme_flat_payload

pytestmark = pytest.mark.shared_data

FIGURES = "longmemeval_s_flat_bm25.json"
DENSE_FIGURES = "longmemeval_s_flat_dense_minilm.json"
S_FILE = "longmemeval_s_cleaned_498of500.json.gz"
DENSE_RANKED = 4  # of the stored records: each is embedded anew (minutes); the benchmark ranks them all


def ranking_hash(positions: list[int]) -> str:
    return hashlib.sha256(json.dumps(positions, separators=(",", ":")).encode()).hexdigest()[:16]


def compare(
    path: Path, figures: str, cls: type[FlatMemory], params: dict[str, object], ranked: int | None = None
) -> tuple[dict[str, int], list]:
    """(questions compared per granularity, the (question, granularity) pairs whose ranking differs).

    Every stored record's inputs are checked against the header's digest; only the first ``ranked``
    (all when None) are ranked (benchmarks/official_retrievers.py ranks all of them)."""
    official = load_figures(figures)
    header = official["header"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == header["dataset"]["sha256"]
    expected = {row["id"]: row for row in official["questions"]}
    payloads = []
    compared = {"turn": 0, "session": 0}
    differing: list[tuple[str, str]] = []
    for item in lme_items(path):
        if len(payloads) == len(expected):
            break  # every record of the figures is found (a spread over the file, in file order)
        if item.question.question_id not in expected:
            continue
        payloads.append(lme_flat_payload(dict(item.raw)))
        if ranked is not None and len(payloads) > ranked:
            continue
        want = expected[item.question.question_id]
        for granularity in compared:
            memory = build(cls, {**params, "granularity": granularity}, item, MemoryDeps(encoder=None))
            positions = [i for i, _ in memory.ranking(item.question.question)]
            result = memory.retrieve(item.question)  # what the pipeline stores: the same order, every document
            assert [u.unit_id for u in result.units] == [memory.units[i].unit_id for i in positions]
            w = want[granularity]
            same = (len(positions), ranking_hash(positions[:50]), ranking_hash(positions)) == (w["n"], w["top50"],
                                                                                               w["full"])  # fmt: skip
            assert positions[:10] == w["head"] or not same
            if not same:
                differing.append((item.question.question_id, granularity))
            compared[granularity] += 1
    assert inputs_digest(payloads) == header["inputs_sha256"]  # the corpora the official code ranked
    return compared, differing


def test_flat_bm25_rankings_equal_longmemevals_at_both_granularities(shared_datasets: Path) -> None:
    compared, differing = compare(shared_datasets / S_FILE, FIGURES, FlatBm25Memory, {})
    assert compared == {"turn": 498, "session": 498}
    assert differing == []


def test_flat_dense_contriever_rankings_equal_longmemevals(shared_datasets: Path, tmp_path: Path) -> None:
    plain = link_plain_model(minilm_path(), tmp_path / "plain_minilm")
    params = {"protocol": "contriever", "model": str(plain)}
    compared, differing = compare(shared_datasets / S_FILE, DENSE_FIGURES, FlatDenseMemory, params, ranked=DENSE_RANKED)
    assert compared == {"turn": DENSE_RANKED, "session": DENSE_RANKED}
    assert differing == []


def test_flat_bm25_scores_do_not_depend_on_restore(shared_datasets: Path) -> None:
    """A memory restored from its checkpoint units ranks exactly as the one that ingested them."""
    item = next(iter(lme_items(shared_datasets / S_FILE)))
    for granularity in ("turn", "session"):
        fresh = build(FlatBm25Memory, {"granularity": granularity}, item, MemoryDeps(encoder=None))
        restored = FlatBm25Memory({"granularity": granularity}, MemoryDeps(encoder=None))
        restored.restore(list(fresh.units))
        assert restored.ranking(item.question.question) == fresh.ranking(item.question.question)
