"""``flat_bm25``: LongMemEval's BM25 variant on a hand-computed table, its corpus rules, its YAML entry.

Hand table (k1 1.5, b 0.75, epsilon 0.25): documents "a b", "a c c", "d"; avgdl = 2.
idf(a) = ln(1.5) - ln(2.5) < 0 -> floored to 0.25 * mean idf of {a, b, c, d}; idf(b,c,d) = ln(2.5) - ln(1.5).
Length norms k1 * (1 - b + b * |d| / avgdl): 1.5, 2.0625, 0.9375. Query "a c":
doc 0 = idf(a) * 2.5 / 2.5; doc 1 = idf(a) * 2.5 / 3.0625 + idf(c) * 5 / 4.0625; doc 2 = 0.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from pipeline.config.model import load_config
from pipeline.kinds.memory import MEMORY_SYSTEMS
from pipeline.kinds.resolve import load_benchmark
from pipeline.memory import okapi
from pipeline.memory.base import MemoryDeps
from pipeline.memory.flat_bm25 import KIND, FlatBm25Memory
from pipeline.memory.okapi import OkapiIndex, argsort_order, document_counts, encoded, first_seen_ids, tokenize
from pipeline.memory.params import MemoryConfigError
from pipeline.memory.systems import system_specs
from tests.support.memory import HAYSTACK, build_haystack, question
from tests.support.paths import PROJECT_ROOT

POS = math.log(2.5) - math.log(1.5)
FLOOR = 0.25 * ((-POS + 3 * POS) / 4)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("a c", [FLOOR * 2.5 / 2.5, FLOOR * 2.5 / 3.0625 + POS * 5 / 4.0625, 0.0]),
        ("c c", [0.0, 2 * POS * 5 / 4.0625, 0.0]),  # a repeated query token counts again
        ("d", [0.0, 0.0, POS * 2.5 / 1.9375]),
        ("A", [0.0, 0.0, 0.0]),  # case kept: 'A' is not 'a'
        ("zzz", [0.0, 0.0, 0.0]),  # unknown token adds 0
    ],
)
def test_okapi_scores_of_the_hand_table(query: str, expected: list[float]) -> None:
    index = OkapiIndex.build([tokenize(t) for t in ("a b", "a c c", "d")])
    assert index.avgdl == 2.0 and index.idf("a") == pytest.approx(FLOOR)
    assert list(index.scores(tokenize(query))) == pytest.approx(expected, abs=1e-15)


def test_tokens_are_split_on_single_spaces_only() -> None:
    assert tokenize("Hi  there, you") == ["Hi", "", "there,", "you"]
    assert tokenize("") == [""]


def test_argsort_order_is_argsort_reversed() -> None:
    assert argsort_order(OkapiIndex.build([["a", "b"], ["a", "c", "c"], ["d"]]).scores(["a", "c"])) == [1, 0, 2]


def test_turn_corpus_holds_user_turns_as_given_in_haystack_order() -> None:
    memory = FlatBm25Memory({}, MemoryDeps(encoder=None))
    for hs in build_haystack():
        memory.ingest_session(HAYSTACK, hs)
    assert [u.unit_id for u in memory.units] == ["s0:0", "s0:2", "s1:0", "s1:2", "s2:0", "s2:2"]
    assert memory.units[0].text == "I adopted a golden retriever puppy last weekend, his name is Biscuit."
    result = memory.retrieve(question("What is the name of my puppy?"))
    assert len(result.units) == 6 and result.units[0].unit_id == "s0:0"  # every document ranked by default
    assert result.units[0].bm25 is not None and result.units[0].semantic is None
    assert [u.rank for u in result.units] == list(range(1, 7))


def test_session_corpus_joins_user_turns_with_one_space() -> None:
    memory = FlatBm25Memory({"granularity": "session", "top_k": 2}, MemoryDeps(encoder=None))
    for hs in build_haystack():
        memory.ingest_session(HAYSTACK, hs)
    first = memory.units[0]
    assert first.unit_id == "s0" and first.turn_ids == ("s0:0", "s0:2")
    assert first.text == ("I adopted a golden retriever puppy last weekend, his name is Biscuit. "
                          "Yes, he chews everything, especially my shoes.")  # fmt: skip
    result = memory.retrieve(question("Which tram did I take in Lisbon?"))
    assert len(result.units) == 2 and result.units[0].unit_id == "s1"  # top_k cuts the stored ranking


def test_both_roles_on_request_and_strict_params() -> None:
    memory = FlatBm25Memory({"roles": ["user", "assistant"]}, MemoryDeps(encoder=None))
    memory.ingest_session(HAYSTACK, build_haystack()[0])
    assert len(memory.units) == 4
    with pytest.raises(MemoryConfigError, match="granularity"):
        FlatBm25Memory({"granularity": "chunk"}, MemoryDeps(encoder=None))


def test_an_empty_memory_returns_nothing() -> None:
    result = FlatBm25Memory({}, MemoryDeps(encoder=None)).retrieve(question("anything?"))
    assert result.units == () and result.context == ""


def test_registered_and_usable_from_yaml(tmp_path: Path) -> None:
    assert MEMORY_SYSTEMS.get(KIND) is FlatBm25Memory
    sample = PROJECT_ROOT / "pipeline/sample_data/locomo_sample.json"
    path = tmp_path / "flat.yaml"
    path.write_text(yaml.safe_dump({
        "results_dir": str(tmp_path / "res"),
        "datasets": [{"name": "loco", "loader": "locomo", "path": str(sample)}],
        "memory_systems": [{"name": "bm25_turns", "kind": "flat_bm25"},
                           {"name": "bm25_sessions", "kind": "flat_bm25", "params": {"granularity": "session"}}],
    }))  # fmt: skip
    load_config.cache_clear()
    specs = system_specs(load_benchmark(str(path)), "loco")
    assert [(s.name, s.kind) for s in specs] == [("bm25_turns", KIND), ("bm25_sessions", KIND)]
    assert specs[0].unit_hash != specs[1].unit_hash
    built = specs[1].build(MemoryDeps(encoder=None))
    assert isinstance(built, FlatBm25Memory) and built.params.granularity == "session"


def test_document_counts_are_distinct_documents_per_word_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each word's count of documents holding it, dense matrix or sorted pairs alike, in first-seen order."""
    docs = [["b", "a", "b", ""], ["c", "a", "a"], ["d"], ["", "b", "e", "e"]]
    index = OkapiIndex.build(docs)
    assert list(index.vocabulary) == ["b", "a", "", "c", "d", "e"]  # rank_bm25's word-by-word order
    expected = [2, 2, 2, 1, 1, 1]
    dense = document_counts(index.token_ids, index.doc_of, len(docs), len(index.vocabulary))
    monkeypatch.setattr(okapi, "DENSE_CELLS", 0)
    by_sorting = document_counts(index.token_ids, index.doc_of, len(docs), len(index.vocabulary))
    assert dense.tolist() == by_sorting.tolist() == expected
    assert OkapiIndex.build(docs).scores(["a", "e", "zzz"]).tobytes() == index.scores(["a", "e", "zzz"]).tobytes()


def test_word_ids_are_numbered_in_first_seen_order_as_a_dict_would() -> None:
    """The encoded ids and words equal a first-seen dict's, for words a missing-value check might catch."""
    tokens = ["nan", "", "None", "b", "", "NaN", "nan", "é", "b", "null", "a", "\udc80"]
    words = dict.fromkeys(tokens)
    expected = dict(zip(words, range(len(words)), strict=True))
    token_ids, vocabulary = first_seen_ids(encoded(tokens))
    assert vocabulary.to_pylist() == [w.encode("utf-8", "surrogatepass") for w in expected]
    assert token_ids.dtype == "int64" and token_ids.tolist() == [expected[t] for t in tokens]
    empty_ids, empty_vocabulary = first_seen_ids(encoded([]))
    assert empty_ids.tolist() == [] and len(empty_vocabulary) == 0


# texts whose split(" ") tokens an Arrow split of their bytes must reproduce: runs of spaces, empty and
# space-only texts, other white space (not a separator), non-ASCII, a lone surrogate
ODD_TEXTS = ["a  b", "", " ", "  lead and trail  ", "tab\there\nnew line", "nbsp\u00a0x ideographic\u3000y",
             "é ü é", "surrogate \udc80 half", "a b", "A a", "nan None"]  # fmt: skip


def _reference_scores(docs: list[list[str]], query: list[str]) -> list[float]:
    """The official definition, term by term (rank_bm25 0.2.2's loop): the bits membench must give."""
    n, avgdl = len(docs), sum(map(len, docs)) / len(docs)
    words = dict.fromkeys(w for d in docs for w in d)
    held = {w: sum(w in d for d in docs) for w in words}
    idf = {w: math.log(n - c + 0.5) - math.log(c + 0.5) for w, c in held.items()}
    floor = 0.25 * (sum(idf.values()) / len(idf))  # summed one after the other in first-seen order
    idf = {w: (floor if v < 0 else v) for w, v in idf.items()}
    score = np.zeros(n)
    lengths = np.array([len(d) for d in docs])
    for token in query:
        tf = np.array([d.count(token) for d in docs])
        score += (idf.get(token) or 0) * (tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * lengths / avgdl)))
    return score.tolist()


@pytest.mark.parametrize("query", ["a b a", "zzz a", "", "  ", "é nan \udc80", "half ideographic\u3000y and"])
def test_an_index_of_texts_is_the_index_of_their_tokens(query: str) -> None:
    """``from_texts`` (Arrow splits the bytes) equals ``build`` of ``tokenize``'s tokens, and both score
    as the official term-by-term loop, bit for bit (repeated, unknown and empty query tokens)."""
    docs = [tokenize(t) for t in ODD_TEXTS]
    by_texts, by_tokens = OkapiIndex.from_texts(ODD_TEXTS), OkapiIndex.build(docs)
    for index in (by_texts, by_tokens):
        assert list(index.vocabulary) == list(dict.fromkeys(w for d in docs for w in d))
        assert index.doc_len.tolist() == [len(d) for d in docs] and index.avgdl == sum(map(len, docs)) / len(docs)
        assert index.scores(tokenize(query)).tolist() == _reference_scores(docs, tokenize(query))
    assert by_texts.token_ids.tolist() == by_tokens.token_ids.tolist()
    assert by_texts.idf_values.tobytes() == by_tokens.idf_values.tobytes()
    assert by_texts.idf("é") == by_tokens.idf("é") and by_texts.idf("zzz") is None
    with pytest.raises(ValueError, match="at least one document"):
        OkapiIndex.from_texts([])
