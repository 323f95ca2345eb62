"""Question-by-question parity of the retrieval metrics with LongMemEval's official code.

The oracle below is LongMemEval's own scoring, embedded as a reference (MIT licence):
``xiaowu0162/LongMemEval`` ``src/retrieval/eval_utils.py`` (dcg, ndcg, evaluate_retrieval,
evaluate_retrieval_turn2session) and the turn-granularity branch of ``process_item_flat_index`` in
``src/retrieval/run_retrieval.py``. Only change: ``np.asfarray`` (removed in NumPy 2) is spelled
``np.asarray(..., dtype=float)``.

Both sides score the SAME ranking of the official turn corpus (user turns only): a lexical
overlap ranking and a seeded random one. Ours sees it as canonical turn ids (through the real
LongMemEval loader) and derives its gold from canonical evidence, exactly as the report does.
Questions the official averages skip (``_abs``) and questions membench excludes for having no gold
turn (the official code would score them recall_any 0 / recall_all 1 / ndcg 0) are counted, not
compared. Needs ../shared/datasets (skipped when absent).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.datasets.base import RecordContext
from pipeline.datasets.longmemeval import parse_record
from pipeline.datasets.sessions import TurnSpec, build_session
from pipeline.datasets.sources import iter_json_array
from pipeline.metrics.retrieval import (
    K_VALUES,
    LEVEL_SESSION,
    LEVEL_TURN,
    UnitRef,
    lme_gold,
    ndcg_any_at_k,
    ranking_at,
    recall_all_at_k,
    recall_any_at_k,
)
from pipeline.partitions import KeyRegistry

pytestmark = pytest.mark.shared_data


# ---- the official oracle (LongMemEval src/retrieval/eval_utils.py, run_retrieval.py) ---------------
def off_dcg(relevances: Any, k: int) -> float:
    relevances = np.asarray(relevances, dtype=float)[:k]
    if relevances.size:
        return relevances[0] + np.sum(relevances[1:] / np.log2(np.arange(2, relevances.size + 1)))
    return 0.0


def off_ndcg(rankings: list[int], correct_docs: list[str], corpus_ids: list[str], k: int = 10) -> float:
    relevances = [1 if doc_id in correct_docs else 0 for doc_id in corpus_ids]
    sorted_relevances = [relevances[idx] for idx in rankings[:k]]
    ideal_relevance = sorted(relevances, reverse=True)
    ideal_dcg = off_dcg(ideal_relevance, k)
    actual_dcg = off_dcg(sorted_relevances, k)
    if ideal_dcg == 0:
        return 0.0
    return actual_dcg / ideal_dcg


def off_evaluate_retrieval(rankings: list[int], correct_docs: list[str], corpus_ids: list[str], k: int = 10) -> tuple:
    recalled_docs = set(corpus_ids[idx] for idx in rankings[:k])
    recall_any = float(any(doc in recalled_docs for doc in correct_docs))
    recall_all = float(all(doc in recalled_docs for doc in correct_docs))
    ndcg_score = off_ndcg(rankings, correct_docs, corpus_ids, k)
    return recall_any, recall_all, ndcg_score


def off_evaluate_retrieval_turn2session(
    rankings: list[int], correct_docs: list[str], corpus_ids: list[str], k: int = 10
) -> tuple:
    def strip_turn_id(docid: str) -> str:
        return "_".join(docid.split("_")[:-1])

    correct_docs = list(set([strip_turn_id(x) for x in correct_docs]))
    corpus_ids = [strip_turn_id(x) for x in corpus_ids]
    effective_k = k
    unique_docids = set(corpus_ids[idx] for idx in rankings[:effective_k])
    while effective_k <= len(corpus_ids) and len(unique_docids) < k:
        effective_k += 1
        unique_docids = set(corpus_ids[idx] for idx in rankings[:effective_k])
    return off_evaluate_retrieval(rankings, correct_docs, corpus_ids, k=effective_k)


def off_turn_corpus(data: list[dict], sess_id: str) -> tuple[list[str], list[str]]:
    """process_item_flat_index, granularity 'turn' (has_answer defaults to False: the S files omit it)."""
    corpus, ids = [], []
    for i_turn, turn in enumerate(data):
        if turn["role"] == "user":
            corpus.append(turn["content"])
            if "answer" not in sess_id or turn.get("has_answer", False):
                ids.append(sess_id + "_" + str(i_turn + 1))
            else:
                ids.append((sess_id + "_" + str(i_turn + 1)).replace("answer", "noans"))
    return corpus, ids


# ---- the comparison ------------------------------------------------------------------------------
_WORD = re.compile(r"\w+")


def lexical_ranking(question: str, corpus: list[str]) -> list[int]:
    """Corpus indices by descending count of shared lower-case words (ties: corpus order)."""
    q = set(_WORD.findall(question.lower()))
    scores = [len(q & set(_WORD.findall(text.lower()))) for text in corpus]
    return sorted(range(len(corpus)), key=lambda i: (-scores[i], i))


def random_ranking(qid: str, n: int) -> list[int]:
    order = list(range(n))
    random.Random(qid).shuffle(order)
    return order


def compare_file(path: Path) -> tuple[dict[str, int], set[str], set[str]]:
    """Counts (compared questions, differing (question, ranking, level, k, metric) values, skips),
    the ids of the questions with a difference, and the ids of questions repeating a session id."""
    counts = {"compared": 0, "differences": 0, "abstention": 0, "no_gold": 0}
    differing: set[str] = set()
    repeated: set[str] = set()
    keys = KeyRegistry("lme")
    for index, raw in iter_json_array(path):
        qid = raw["question_id"]
        if "_abs" in qid:
            counts["abstention"] += 1
            continue
        parsed = parse_record(RecordContext("lme", str(path), index, f"#{index}"), raw, keys)
        turns_by_session = {s.session.session_key: s.turns for s in parsed.sessions}
        gold = lme_gold(list(parsed.evidence), turns_by_session)
        if not gold.turns:
            counts["no_gold"] += 1
            continue
        corpus: list[str] = []
        corpus_ids: list[str] = []
        ours: list[tuple[str, str]] = []  # (session_key, turn_id) per official corpus entry
        for sid, date, session in zip(raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"],
                                      strict=True):  # fmt: skip
            specs = [TurnSpec(t["role"], t["role"], t["content"], bool(t.get("has_answer"))) for t in session]
            built = build_session("lme", sid, date, None, None, specs)
            texts, ids = off_turn_corpus(session, sid)
            corpus += texts
            corpus_ids += ids
            ours += [(built.session.session_key, t.turn_id) for t in built.turns if t.role == "user"]
        correct = list({d for d in corpus_ids if "answer" in d})
        if len(set(raw["haystack_session_ids"])) < len(raw["haystack_session_ids"]):
            repeated.add(qid)
        for ranking in (lexical_ranking(raw["question"], corpus), random_ranking(qid, len(corpus))):
            units = [UnitRef(r, ours[i][0], (ours[i][1],)) for r, i in enumerate(ranking, start=1)]
            for level, official in ((LEVEL_TURN, off_evaluate_retrieval),
                                    (LEVEL_SESSION, off_evaluate_retrieval_turn2session)):  # fmt: skip
                ranked = ranking_at(level, units, gold)
                gold_ids = gold.at(level)
                for k in K_VALUES:
                    expected = official(ranking, correct, corpus_ids, k=k)
                    got = (
                        recall_any_at_k(ranked, gold_ids, k),
                        recall_all_at_k(ranked, gold_ids, k),
                        ndcg_any_at_k(ranked, gold_ids, k),
                    )
                    n = sum(abs(a - b) > 1e-9 for a, b in zip(got, expected, strict=True))
                    counts["differences"] += int(n)
                    if n:
                        differing.add(qid)
        counts["compared"] += 1
    return counts, differing, repeated


def _files(shared: Path) -> Iterator[Path]:
    yield shared / "longmemeval_oracle.json"
    yield shared / "longmemeval_s_cleaned_498of500.json.gz"


def test_session_and_turn_metrics_equal_longmemevals_code(shared_datasets: Path) -> None:
    (oracle, oracle_diff, _), (s, s_diff, s_repeated) = (compare_file(p) for p in _files(shared_datasets))
    # oracle: 500 = 30 abstention + 51 without a gold user turn (single-session-assistant) + 419 compared
    assert (oracle["compared"], oracle["abstention"], oracle["no_gold"]) == (419, 30, 51)
    assert oracle["differences"] == 0 and not oracle_diff
    # S: 498 = 30 + 50 + 418. The only differences are in questions whose haystack repeats a session
    # id with another date: the official ids merge both occurrences into one session, the loader keeps
    # two sessions (pipeline/datasets/longmemeval.py 'repeated_session_id'); the metric is not involved.
    assert (s["compared"], s["abstention"], s["no_gold"]) == (418, 30, 50)
    assert s_diff <= s_repeated
    assert s_diff == {"1e043500", "d23cf73b"}
