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

Levels (one pinned name each):
- ``turn``: turn ids (the ranked units expanded to their turn ids, first appearance wins).
- ``session`` (default, LongMemEval's official definition, ``run_retrieval.py`` +
  ``evaluate_retrieval_turn2session``): for a TURN ranking (every unit holds exactly one turn),
  each ranked turn is mapped to a session label: a gold turn -> its session; any other turn of an
  answer session -> ``noans:<session>`` (LongMemEval renames the user turns of an answer session
  that carry no ``has_answer`` to ``noans_...``, a different, non-gold session); any other turn ->
  its session. The cut-off grows from k until k DISTINCT labels are covered (or the ranking ends);
  recall_any/all compare the labels in that prefix with the gold sessions; ndcg_any scores EVERY
  labelled turn of the prefix (relevance 1 when its label is a gold session) against an ideal of
  min(|gold turns|, effective k) hits. For a SESSION ranking (units are whole sessions, session
  chunks, notes or summaries) the labels are the sessions in first-appearance order, LongMemEval's
  session-corpus protocol, where k needs no widening. Sessions are IDENTIFIED as the official code
  identifies them: by the haystack's session id (``source_session_id``), so a session id that a
  haystack repeats with another date (13 questions of LongMemEval_S) is one session at this level,
  as ``strip_turn_id`` makes it in ``evaluate_retrieval_turn2session``.
- ``session_keyed`` (variant): the same conversion, with sessions identified by membench's
  session key (content + date), so a repeated id with another date counts as two sessions. This
  was membench's ``session`` level before the official conversion; it differs from the official value only on
  questions whose haystack repeats a session id.
- ``session_dedup`` (variant, NOT LongMemEval's): sessions in the order they first appear among
  the ranked units, each scored once, k not widened; any turn of an answer session counts as a
  hit. This was membench's first ``session`` level; on a turn ranking it is higher
  than the official value (LongMemEval_S, BM25 turns: recall_any@5 .861 vs .742).

Exclusions (counted, never scored as zero): LongMemEval abstention questions (question id ends
in ``_abs``), and questions without gold units at the level scored.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from operator import attrgetter
from typing import Protocol, TypeVar

from pipeline.core.families import is_abstention_id, is_longmemeval
from pipeline.core.records import LEVEL_SESSION, LEVEL_TURN, EvidenceRow

K_VALUES: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
LEVEL_SESSION_DEDUP = "session_dedup"
LEVEL_SESSION_KEYED = "session_keyed"
LEVELS: tuple[str, ...] = (LEVEL_TURN, LEVEL_SESSION, LEVEL_SESSION_KEYED, LEVEL_SESSION_DEDUP)
# label of a non-gold turn of an answer session (LongMemEval: ``answer_...`` -> ``noans_...``)
NOANS_PREFIX = "noans:"

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
# a system whose items carry session keys but no turn ids (a memory product's derived facts): turn level undefined
OUTCOME_EXCLUDED_NO_SOURCE_IDS = "excluded_no_source_ids"

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
    "level session": (
        "LongMemEval's official session metrics: a turn ranking is converted as evaluate_retrieval_turn2session "
        "does (non-gold turns of an answer session become a distinct non-gold 'noans' session; k grows until k "
        "distinct sessions are covered; ndcg counts every gold-session turn, ideal = min(|gold turns|, k)); a "
        "session ranking is scored on its sessions. Sessions are identified by the haystack's session id, as the "
        "official code does (a repeated id with another date is one session)."
    ),
    "level session_keyed": (
        "variant (not LongMemEval's): the 'session' conversion with sessions identified by membench's session key "
        "(content + date): a session id repeated with another date counts twice. Equals 'session' except on "
        "haystacks that repeat a session id."
    ),
    "level session_dedup": (
        "variant (not LongMemEval's): sessions in first-appearance order, each once, k not widened; any turn "
        "of an answer session is a hit. Higher than 'session' on turn rankings."
    ),
}


def metric_column(metric: str, k: int | None = None) -> str:
    """SQL-friendly column name: ``recall_any_at_10`` (``k=None`` for context metrics)."""
    return metric if k is None else f"{metric}_at_{k}"


def metric_label(metric: str, k: int | None = None) -> str:
    """Display name as in LongMemEval: ``recall_any@10``."""
    return metric if k is None else f"{metric}@{k}"


def metric_columns(ks: Sequence[int] = K_VALUES) -> tuple[str, ...]:
    """The metric columns for cut-offs ``ks`` (a config's ``retrieval_k``), in table order."""
    return (*(metric_column(m, k) for m in RANKED_METRICS for k in ks), EVIDENCE_RECALL_CONTEXT)


@functools.cache
def _k_columns(ks: tuple[int, ...]) -> tuple[tuple[int, str, str, str, str], ...]:
    """Per k of ``ks``: k and its four ranked metrics' column names (``score_ranking`` fills them
    for every (question, system, level): ~80k names a LongMemEval_S report, made once here)."""
    return tuple(
        (
            k,
            metric_column(RECALL_ANY, k),
            metric_column(RECALL_ALL, k),
            metric_column(NDCG_ANY, k),
            metric_column(EVIDENCE_RECALL, k),
        )
        for k in ks
    )


METRIC_COLUMNS: tuple[str, ...] = metric_columns(K_VALUES)
METRIC_COLUMN_RE = r"^(recall_any|recall_all|ndcg_any|evidence_recall)_at_(\d+)$"


# ---- the metrics (pure) ------------------------------------------------------------------
@dataclass(frozen=True)
class Ranked:
    """A ranking whose ids may repeat and whose cut-off widens: LongMemEval's turn->session form.

    ``ids``: one session label per ranked turn (see the module docstring); ``n_relevant``: the
    relevant entries of the whole corpus (the gold turns), which LongMemEval's ideal DCG counts.
    ``len()`` is the number of distinct labels, i.e. of sessions ranked.
    """

    ids: tuple[str, ...]
    n_relevant: int
    # k -> effective_k(ids, k): each of a k's four metrics widens the same cut (a report asks for every k)
    _cuts: dict[int, int] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return len(set(self.ids))

    def cut(self, k: int) -> int:
        """``effective_k(self.ids, k)``, computed once per k."""
        found = self._cuts.get(k)
        if found is None:
            found = self._cuts[k] = effective_k(self.ids, k)
        return found


def effective_k(ids: Sequence[str], k: int) -> int:
    """LongMemEval's widened cut-off: the smallest prefix length >= k holding k distinct ids.

    As ``evaluate_retrieval_turn2session``: start at k and add one entry at a time while fewer than
    k distinct ids are covered and the corpus is not exhausted (it may end one past the length,
    which a slice treats as the whole ranking).
    """
    ek, n = k, len(ids)
    seen = set(ids[:ek])  # = set(ids[:ek]) at every test below, kept up to date one entry at a time
    while ek <= n and len(seen) < k:
        if ek < n:
            seen.add(ids[ek])
        ek += 1
    return ek


def _top(ranking: Sequence[str] | Ranked, k: int) -> Sequence[str]:
    if isinstance(ranking, Ranked):
        return ranking.ids[: ranking.cut(k)]
    return ranking[:k]


def _check(gold: Collection[str], k: int) -> None:
    if not gold:
        raise ValueError("retrieval metric of a question without gold units is undefined (exclude it)")
    if k < 1:
        raise ValueError(f"k must be >= 1 (got {k})")


def dcg(relevances: Sequence[float]) -> float:
    """LongMemEval's DCG: ``rel[0] + sum(rel[p] / log2(p + 1) for p >= 1)`` (0-based p).

    Zero relevances are skipped: adding ``0.0`` leaves a float sum's bits as they are, and most
    entries of a widened turn->session cut are zeros (the report scores ~10^5 of them)."""
    if not relevances:
        return 0.0
    return float(relevances[0]) + sum(float(r) / math.log2(p + 1) for p, r in enumerate(relevances) if p >= 1 and r)


@functools.cache
def _ideal_dcg(hits: int) -> float:
    """``dcg([1.0] * hits)``: the ideal DCG depends on the hit count alone (a report asks ~10^4 times)."""
    return dcg([1.0] * hits)


def recall_any_at_k(ranking: Sequence[str] | Ranked, gold: Collection[str], k: int) -> float:
    _check(gold, k)
    top = set(_top(ranking, k))
    return float(any(g in top for g in gold))


def recall_all_at_k(ranking: Sequence[str] | Ranked, gold: Collection[str], k: int) -> float:
    _check(gold, k)
    top = set(_top(ranking, k))
    return float(all(g in top for g in gold))


def ndcg_any_at_k(ranking: Sequence[str] | Ranked, gold: Collection[str], k: int) -> float:
    """LongMemEval's ``ndcg``: ideal = min(relevant entries of the corpus, k) hits.

    A plain id ranking holds each gold id at most once, so its corpus has |gold| relevant entries;
    a turn->session ``Ranked`` carries its own count (the gold turns, each one relevant entry).
    """
    _check(gold, k)
    gold_set = set(gold)
    return _ndcg(*_ndcg_cut(ranking, gold_set, k), gold_set)


def _ndcg_cut(ranking: Sequence[str] | Ranked, gold_set: Collection[str], k: int) -> tuple[Sequence[str], int]:
    """The top cut ndcg scores and its ideal hit count: min(relevant entries of the corpus, cut)."""
    if isinstance(ranking, Ranked):
        cut = ranking.cut(k)
        return ranking.ids[:cut], min(ranking.n_relevant, cut)
    return ranking[:k], min(len(gold_set), k)


def _ndcg(top: Sequence[str], ideal_hits: int, gold_set: Collection[str]) -> float:
    actual = dcg([1.0 if unit in gold_set else 0.0 for unit in top])
    ideal = _ideal_dcg(ideal_hits)
    return actual / ideal if ideal else 0.0


def evidence_recall_at_k(ranking: Sequence[str] | Ranked, gold: Collection[str], k: int) -> float:
    _check(gold, k)
    return evidence_recall(_top(ranking, k), gold)


def evidence_recall(retrieved: Iterable[str] | Ranked, gold: Collection[str]) -> float:
    """Share of ``gold`` present in ``retrieved`` (any order)."""
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("evidence recall of a question without gold units is undefined (exclude it)")
    ids = retrieved.ids if isinstance(retrieved, Ranked) else retrieved
    return len(gold_set & set(ids)) / len(gold_set)


# ---- rankings ----------------------------------------------------------------------------
@dataclass(frozen=True)
class UnitRef:
    """What the metrics need of one retrieved unit (see memory.base.RetrievedUnit)."""

    rank: int
    session_key: str
    turn_ids: tuple[str, ...]


_BY_RANK = attrgetter("rank")  # the units' sort key (a C getter: the report sorts ~10^6 units)


def _dedup(ids: Iterable[str]) -> list[str]:
    """Order-preserving dedup (first appearance wins)."""
    return list(dict.fromkeys(ids))


@dataclass(frozen=True)
class RankedUnits:
    """Units sorted by rank, as columns: what every level's ranking reads of them.

    Why: a report ranks ~4k (question, system, level) pairs twice (all units, the context), each of
    which sorted its ``UnitRef``s and walked them again; sorted once into these columns, a level's
    ranking is a dedup of one column, the context a prefix, and the report can fill them straight
    from Arrow (pipeline/report/retrieval_table.py) without a Python object per unit.
    ``session_keys``: one per unit; ``turn_ids``: every unit's turn ids, unit after unit;
    ``offsets``: unit i's turn ids are ``turn_ids[offsets[i]:offsets[i + 1]]`` (``offsets[0] == 0``).
    """

    session_keys: list[str]
    turn_ids: list[str]
    offsets: list[int]

    @classmethod
    def of(cls, units: Sequence[UnitRef]) -> RankedUnits:
        ranked = sorted(units, key=_BY_RANK)
        return cls(
            [u.session_key for u in ranked],
            [t for u in ranked for t in u.turn_ids],
            [0, *accumulate(len(u.turn_ids) for u in ranked)],
        )

    def __len__(self) -> int:
        return len(self.session_keys)

    def head(self, n: int) -> RankedUnits:
        """The first ``n`` units (the reader's context, see ``context_size``)."""
        n = min(n, len(self))
        return RankedUnits(self.session_keys[:n], self.turn_ids[: self.offsets[n]], self.offsets[: n + 1])

    @functools.cached_property
    def one_turn_each(self) -> bool:
        """Every unit holds exactly one turn (offsets 0, 1, 2, ...)."""
        return self.offsets == list(range(len(self.offsets)))

    @functools.cached_property
    def turns_with_sessions(self) -> list[tuple[str, str]]:
        """(turn id, its unit's session key) in rank order, a turn's first appearance only."""
        if self.one_turn_each:
            sessions: Iterable[str] = self.session_keys
        else:
            spans = zip(self.session_keys, self.offsets, self.offsets[1:], strict=False)
            sessions = [key for key, a, b in spans for _ in range(b - a)]
        seen: dict[str, str] = {}
        for t, session in zip(self.turn_ids, sessions, strict=True):
            seen.setdefault(t, session)
        return list(seen.items())


Units = Sequence[UnitRef] | RankedUnits


def ranked_units(units: Units) -> RankedUnits:
    """``units`` sorted by rank as ``RankedUnits`` (as they are when they already are)."""
    return units if isinstance(units, RankedUnits) else RankedUnits.of(units)


def session_ranking(units: Units) -> list[str]:
    """Session keys in the order they first appear among the units sorted by rank."""
    return _dedup(ranked_units(units).session_keys)


def turn_ranking(units: Units) -> list[str]:
    """Turn ids of the units sorted by rank, each unit expanded in its own turn order; dedup."""
    return _dedup(ranked_units(units).turn_ids)


def is_turn_ranking(units: Units) -> bool:
    """True when every unit is one turn: the only case LongMemEval converts turns to sessions."""
    ranked = ranked_units(units)
    return bool(len(ranked)) and ranked.one_turn_each


def turn2session_ranking(units: Units, gold: Gold, official_ids: bool = True) -> Ranked:
    """LongMemEval's session view of a turn ranking (``noans`` relabelling, see module docstring);
    sessions named by their official id (``official_ids``) or by membench's session key."""
    pairs = ranked_units(units).turns_with_sessions
    # each session's two labels made once, not once per turn (~200k turns a LongMemEval_S report)
    names = {s: gold.haystack_session_id(s) if official_ids else s for s in dict.fromkeys(s for _, s in pairs)}
    noans = {s: NOANS_PREFIX + names[s] for s in names if s in gold.answer_sessions}
    turns = gold.turns
    return Ranked(tuple(noans[s] if s in noans and t not in turns else names[s] for t, s in pairs), len(turns))


def ranking_at(level: str, units: Units, gold: Gold | None = None) -> list[str] | Ranked:
    """The ranking scored at ``level``. ``session`` needs ``gold`` for a turn ranking (which turns
    are gold, which sessions are answer sessions); without it the session order is returned."""
    ranked = ranked_units(units)
    if level == LEVEL_TURN:
        return turn_ranking(ranked)
    if level == LEVEL_SESSION_DEDUP:
        return session_ranking(ranked)
    if level in (LEVEL_SESSION, LEVEL_SESSION_KEYED):
        official = level == LEVEL_SESSION
        if gold is not None and is_turn_ranking(ranked):
            return turn2session_ranking(ranked, gold, official_ids=official)
        sessions = session_ranking(ranked)
        return [gold.haystack_session_id(s) for s in sessions] if (official and gold is not None) else sessions
    raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")


class _HasRank(Protocol):
    @property
    def rank(self) -> int: ...


R = TypeVar("R", bound=_HasRank)  # UnitRef, memory.base.RetrievedUnit, ...


def context_units(units: Sequence[R], trimmed_units: int, units_total: int | None = None) -> list[R]:
    """Units that reached the reader's context.

    Ranked systems (``memory.context.ranked_result``) list every hit and the budget drops a suffix
    of the rank order, so the context is the first ``len(units) - trimmed_units`` units. A system
    that lists only the units it kept (the full-context baseline: ``notes.units_total`` =
    listed + trimmed) already gives exactly the context.
    """
    ranked = sorted(units, key=_BY_RANK)
    return ranked[: context_size(len(ranked), trimmed_units, units_total)]


def context_size(listed: int, trimmed_units: int, units_total: int | None = None) -> int:
    """How many of ``listed`` units, in rank order, reached the context (see ``context_units``)."""
    trimmed = max(0, trimmed_units)
    if units_total is not None and listed + trimmed == units_total:
        return listed
    return max(0, listed - trimmed)


# ---- gold derivation ---------------------------------------------------------------------
class TurnLike(Protocol):  # read-only members, so frozen dataclasses (records.TurnRow) match
    @property
    def turn_id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def has_answer(self) -> bool: ...


@dataclass(frozen=True)
class Gold:
    """Gold unit ids of one question at both levels."""

    turns: frozenset[str]
    sessions: frozenset[str]
    # every answer session, gold or not (LongMemEval relabels their non-gold turns ``noans``)
    answer_sessions: frozenset[str] = frozenset()
    # session key -> the session's id in the raw haystack (the official protocol's session identity);
    # a key absent here is its own id
    source_ids: Mapping[str, str] = field(default_factory=dict, compare=False)

    def haystack_session_id(self, session_key: str) -> str:
        return self.source_ids.get(session_key, session_key)

    def at(self, level: str) -> frozenset[str]:
        if level == LEVEL_TURN:
            return self.turns
        if level == LEVEL_SESSION:
            return frozenset(self.haystack_session_id(s) for s in self.sessions)
        return self.sessions


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
    sessions = frozenset(e.unit_id for e in evidence if e.level == LEVEL_SESSION)
    return Gold(
        turns=frozenset(e.unit_id for e in evidence if e.level == LEVEL_TURN),
        sessions=sessions,
        answer_sessions=sessions,
    )


def lme_gold(
    evidence: Sequence[EvidenceRow],
    turns: Mapping[str, Sequence[TurnLike]],
    source_ids: Mapping[str, str] | None = None,
) -> Gold:
    """LongMemEval gold; ``source_ids`` (session key -> haystack session id) names the sessions as
    the official code does (level ``session``)."""
    return Gold(
        turns=lme_gold_turns(evidence, turns),
        sessions=lme_gold_sessions(evidence, turns),
        answer_sessions=frozenset(_answer_sessions(evidence)),
        source_ids=dict(source_ids or {}),
    )


def gold_protocol(loader: str) -> str:
    """Which gold derivation a dataset uses, by its loader's family (pipeline.core.families)."""
    return PROTOCOL_LONGMEMEVAL if is_longmemeval(loader) else PROTOCOL_EVIDENCE


def exclusion(protocol: str, question_id: str, gold: Collection[str]) -> str | None:
    """Why a question is not scored at a level (None = scored). Abstention wins over no-gold."""
    if protocol == PROTOCOL_LONGMEMEVAL and is_abstention_id(question_id):
        return OUTCOME_EXCLUDED_ABSTENTION
    if not gold:
        return OUTCOME_EXCLUDED_NO_GOLD
    return None


# ---- all metrics of one (question, system, level) ------------------------------------------
def score_ranking(
    ranking: Sequence[str] | Ranked,
    in_context: Iterable[str] | Ranked,
    gold: Collection[str],
    ks: Sequence[int] = K_VALUES,
) -> dict[str, float]:
    """Every metric column (``metric_columns(ks)``) for one ranking against non-empty ``gold``.

    The values of ``recall_any_at_k``, ``recall_all_at_k``, ``ndcg_any_at_k`` and
    ``evidence_recall_at_k``, each k's top cut and its set made once for the four (a report scores
    ~4k rankings at six k; tests/metrics/test_retrieval_cuts.py holds them equal by ``float.hex``)."""
    gold_set = set(gold)
    scores: dict[str, float] = {}
    for k, any_col, all_col, ndcg_col, recall_col in _k_columns(tuple(ks)):
        _check(gold, k)
        top, ideal_hits = _ndcg_cut(ranking, gold_set, k)  # = _top(ranking, k): one cut for the four
        found = len(gold_set & set(top))
        scores[any_col] = float(found > 0)
        scores[all_col] = float(found == len(gold_set))
        scores[ndcg_col] = _ndcg(top, ideal_hits, gold_set)
        scores[recall_col] = found / len(gold_set)
    scores[EVIDENCE_RECALL_CONTEXT] = evidence_recall(in_context, gold)
    return scores
