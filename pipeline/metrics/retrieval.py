"""Retrieval metrics, pinned to LongMemEval's definitions (its ``src/retrieval/eval_utils.py``).

Why copy LongMemEval exactly: retrieval numbers are only worth reporting if they can be set
next to published ones. Definitions (k in ``K_VALUES``; ``gold`` = the question's gold unit ids):

- ``recall_any@k``: 1 if at least one gold id is among the top-k ranked ids, else 0.
- ``recall_all@k``: 1 if every gold id is among the top-k ranked ids, else 0.
- ``ndcg_any@k``: DCG of the top-k binary relevances divided by the ideal DCG, where the ideal
  ranking puts min(|gold|, k) relevant ids first. DCG is LongMemEval's ``dcg()``:
  ``rel_1 + sum_{i=2..k} rel_i / log2(i)`` (1-based rank i), i.e. 0-based position p weighs
  ``1 / log2(p + 1)`` except p = 0 which weighs 1 — so ranks 1 and 2 weigh the same. This is
  NOT the textbook ``1 / log2(p + 2)`` discount; LongMemEval's code is the reference here.
- ``evidence_recall@k``: |gold ∩ top-k| / |gold| (LoCoMo-style share of gold evidence retrieved).
- ``evidence_recall_context``: |gold ∩ ids of the units kept in the reader's context| / |gold|.

Levels: ``turn`` ranks turn ids (the ranked units expanded to their turn ids, first appearance
wins); ``session`` ranks session keys in the order they first appear among the ranked units
(dedup). For recall this equals LongMemEval's turn->session conversion (which widens k until k
distinct sessions are seen); for ndcg it scores each session once (LongMemEval's conversion
scores every retrieved turn of a gold session, so its session ndcg can differ).

Exclusions (counted, never scored as zero): LongMemEval abstention questions (question id ends
in ``_abs``), and questions without gold units at the level scored.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from pipeline.records import LEVEL_SESSION, LEVEL_TURN, EvidenceRow

K_VALUES: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
LEVELS: tuple[str, ...] = (LEVEL_TURN, LEVEL_SESSION)

RECALL_ANY = "recall_any"
RECALL_ALL = "recall_all"
NDCG_ANY = "ndcg_any"
EVIDENCE_RECALL = "evidence_recall"
EVIDENCE_RECALL_CONTEXT = "evidence_recall_context"
RANKED_METRICS: tuple[str, ...] = (RECALL_ANY, RECALL_ALL, NDCG_ANY, EVIDENCE_RECALL)

OUTCOME_SCORED = "scored"
OUTCOME_EXCLUDED_ABSTENTION = "excluded_abstention"
OUTCOME_EXCLUDED_NO_GOLD = "excluded_no_gold"
OUTCOME_RETRIEVAL_FAILED = "retrieval_failed"
OUTCOMES: tuple[str, ...] = (
    OUTCOME_SCORED,
    OUTCOME_EXCLUDED_ABSTENTION,
    OUTCOME_EXCLUDED_NO_GOLD,
    OUTCOME_RETRIEVAL_FAILED,
)

# how a dataset's gold units are derived from its canonical evidence
PROTOCOL_LONGMEMEVAL = "longmemeval"
PROTOCOL_EVIDENCE = "evidence"

METRIC_DEFINITIONS: dict[str, str] = {
    "recall_any@k": "1 if any gold unit is in the top-k ranked units, else 0; averaged over scored questions.",
    "recall_all@k": "1 if all gold units are in the top-k ranked units, else 0; averaged over scored questions.",
    "ndcg_any@k": (
        "DCG of binary relevance over the top-k / ideal DCG (min(|gold|, k) hits first); LongMemEval's DCG: "
        "rank 1 weighs 1, rank r >= 2 weighs 1/log2(r)."
    ),
    "evidence_recall@k": "share of the gold units found in the top-k ranked units (LoCoMo evidence recall).",
    "evidence_recall_context": "share of the gold units found in the units kept in the reader's context.",
}


def metric_column(metric: str, k: int | None = None) -> str:
    """SQL-friendly column name: ``recall_any_at_10`` (``k=None`` for context metrics)."""
    return metric if k is None else f"{metric}_at_{k}"


def metric_label(metric: str, k: int | None = None) -> str:
    """Display name as in LongMemEval: ``recall_any@10``."""
    return metric if k is None else f"{metric}@{k}"


METRIC_COLUMNS: tuple[str, ...] = (
    *(metric_column(m, k) for m in RANKED_METRICS for k in K_VALUES),
    EVIDENCE_RECALL_CONTEXT,
)


# ---- the metrics (pure) ------------------------------------------------------------------
def _check(gold: Collection[str], k: int) -> None:
    if not gold:
        raise ValueError("retrieval metric of a question without gold units is undefined (exclude it)")
    if k < 1:
        raise ValueError(f"k must be >= 1 (got {k})")


def dcg(relevances: Sequence[float]) -> float:
    """LongMemEval's DCG: ``rel[0] + sum(rel[p] / log2(p + 1) for p >= 1)`` (0-based p)."""
    if not relevances:
        return 0.0
    return float(relevances[0]) + sum(float(r) / math.log2(p + 1) for p, r in enumerate(relevances) if p >= 1)


def recall_any_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    _check(gold, k)
    top = set(ranking[:k])
    return float(any(g in top for g in gold))


def recall_all_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    _check(gold, k)
    top = set(ranking[:k])
    return float(all(g in top for g in gold))


def ndcg_any_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    _check(gold, k)
    gold_set = set(gold)
    actual = dcg([1.0 if unit in gold_set else 0.0 for unit in ranking[:k]])
    ideal = dcg([1.0] * min(len(gold_set), k))
    return actual / ideal


def evidence_recall_at_k(ranking: Sequence[str], gold: Collection[str], k: int) -> float:
    _check(gold, k)
    return evidence_recall(ranking[:k], gold)


def evidence_recall(retrieved: Iterable[str], gold: Collection[str]) -> float:
    """Share of ``gold`` present in ``retrieved`` (any order)."""
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("evidence recall of a question without gold units is undefined (exclude it)")
    return len(gold_set & set(retrieved)) / len(gold_set)


# ---- rankings ----------------------------------------------------------------------------
@dataclass(frozen=True)
class UnitRef:
    """What the metrics need of one retrieved unit (see memory.base.RetrievedUnit)."""

    rank: int
    session_key: str
    turn_ids: tuple[str, ...]


def _dedup(ids: Iterable[str]) -> list[str]:
    """Order-preserving dedup (first appearance wins)."""
    return list(dict.fromkeys(ids))


def session_ranking(units: Sequence[UnitRef]) -> list[str]:
    """Session keys in the order they first appear among the units sorted by rank."""
    return _dedup(u.session_key for u in sorted(units, key=lambda u: u.rank))


def turn_ranking(units: Sequence[UnitRef]) -> list[str]:
    """Turn ids of the units sorted by rank, each unit expanded in its own turn order; dedup."""
    return _dedup(t for u in sorted(units, key=lambda u: u.rank) for t in u.turn_ids)


def ranking_at(level: str, units: Sequence[UnitRef]) -> list[str]:
    if level == LEVEL_TURN:
        return turn_ranking(units)
    if level == LEVEL_SESSION:
        return session_ranking(units)
    raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")


def context_units(units: Sequence[UnitRef], trimmed_units: int, units_total: int | None = None) -> list[UnitRef]:
    """Units that reached the reader's context.

    Ranked systems (``memory.context.ranked_result``) list every hit and the budget drops a suffix
    of the rank order, so the context is the first ``len(units) - trimmed_units`` units. A system
    that lists only the units it kept (the full-context baseline: ``notes.units_total`` =
    listed + trimmed) already gives exactly the context.
    """
    ranked = sorted(units, key=lambda u: u.rank)
    trimmed = max(0, trimmed_units)
    if units_total is not None and len(ranked) + trimmed == units_total:
        return ranked
    return ranked[: max(0, len(ranked) - trimmed)]


# ---- gold derivation ---------------------------------------------------------------------
class TurnLike(Protocol):
    turn_id: str
    role: str
    has_answer: bool


@dataclass(frozen=True)
class Gold:
    """Gold unit ids of one question at both levels."""

    turns: frozenset[str]
    sessions: frozenset[str]

    def at(self, level: str) -> frozenset[str]:
        return self.turns if level == LEVEL_TURN else self.sessions


def _answer_sessions(evidence: Iterable[EvidenceRow]) -> list[str]:
    return _dedup(e.unit_id for e in evidence if e.level == LEVEL_SESSION)


def lme_gold_turns(evidence: Sequence[EvidenceRow], turns: Mapping[str, Sequence[TurnLike]]) -> frozenset[str]:
    """LongMemEval turn gold: user turns with ``has_answer`` inside the answer sessions.

    Why user turns only: LongMemEval indexes only user turns (``process_item_flat_index``), so an
    assistant turn flagged ``has_answer`` is not a retrievable gold id in its protocol.
    """
    return frozenset(
        t.turn_id for s in _answer_sessions(evidence) for t in turns.get(s, ()) if t.role == "user" and t.has_answer
    )


def lme_gold_sessions(evidence: Sequence[EvidenceRow], turns: Mapping[str, Sequence[TurnLike]]) -> frozenset[str]:
    """LongMemEval session gold: answer sessions with at least one user turn carrying ``has_answer``.

    Why: LongMemEval renames an answer session whose user turns carry no ``has_answer`` to
    ``noans`` (not gold), e.g. most single-session-assistant evidence; such questions then have no
    gold and are excluded (counted) rather than scored 0.
    """
    return frozenset(
        s for s in _answer_sessions(evidence) if any(t.role == "user" and t.has_answer for t in turns.get(s, ()))
    )


def evidence_gold(evidence: Sequence[EvidenceRow]) -> Gold:
    """Gold as the canonical evidence rows give it (LoCoMo: D<s>:<t> turns and their sessions)."""
    return Gold(
        turns=frozenset(e.unit_id for e in evidence if e.level == LEVEL_TURN),
        sessions=frozenset(e.unit_id for e in evidence if e.level == LEVEL_SESSION),
    )


def lme_gold(evidence: Sequence[EvidenceRow], turns: Mapping[str, Sequence[TurnLike]]) -> Gold:
    return Gold(turns=lme_gold_turns(evidence, turns), sessions=lme_gold_sessions(evidence, turns))


def gold_protocol(loader: str) -> str:
    """Which gold derivation a dataset uses, by its loader name (``longmemeval*`` -> LongMemEval)."""
    return PROTOCOL_LONGMEMEVAL if loader.lower().startswith("longmemeval") else PROTOCOL_EVIDENCE


def exclusion(protocol: str, question_id: str, gold: Collection[str]) -> str | None:
    """Why a question is not scored at a level (None = scored). Abstention wins over no-gold."""
    if protocol == PROTOCOL_LONGMEMEVAL and question_id.endswith("_abs"):
        return OUTCOME_EXCLUDED_ABSTENTION
    if not gold:
        return OUTCOME_EXCLUDED_NO_GOLD
    return None


# ---- all metrics of one (question, system, level) ------------------------------------------
def score_ranking(ranking: Sequence[str], in_context: Iterable[str], gold: Collection[str]) -> dict[str, float]:
    """Every metric column (``METRIC_COLUMNS``) for one ranking against non-empty ``gold``."""
    scores: dict[str, float] = {}
    for k in K_VALUES:
        scores[metric_column(RECALL_ANY, k)] = recall_any_at_k(ranking, gold, k)
        scores[metric_column(RECALL_ALL, k)] = recall_all_at_k(ranking, gold, k)
        scores[metric_column(NDCG_ANY, k)] = ndcg_any_at_k(ranking, gold, k)
        scores[metric_column(EVIDENCE_RECALL, k)] = evidence_recall_at_k(ranking, gold, k)
    scores[EVIDENCE_RECALL_CONTEXT] = evidence_recall(in_context, gold)
    return scores
