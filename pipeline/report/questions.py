"""Per-question drill-down data: question, gold, retrieved context with evidence marked, answers,
verdicts and errors, for every system of one dataset.

Why a separate read: the aggregate views answer "how good", these rows answer "why": a reader
of the report opens one question and sees what the memory returned (gold evidence marked, with
the rank at which each gold unit was found), what the reader answered and how each judge ruled,
or the error that stopped it. Bounded on purpose (the first ``TOP_UNITS`` units, texts cut at
``TEXT_CHARS``) so that a dataset of thousands of questions still gives pages a browser opens.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import duckdb

from pipeline.catalog.agentic import drilldown_steps
from pipeline.report.sql import query_rows, view_names

TOP_UNITS = 5
TEXT_CHARS = 300
LEVEL_TURN = "turn"
LEVEL_SESSION = "session"

# verdict of one judgment as shown in the question index
MARK_CORRECT = "correct"
MARK_WRONG = "wrong"
MARK_EXCLUDED = "excluded"
MARK_FAILED = "failed"
MARK_MISSING = "missing"


@dataclass
class RetrievedUnit:
    rank: int
    label: str  # session (and turn) ids as the dataset names them
    text: str
    gold: str  # "turn" (holds a gold turn), "session" (in a gold session), "" (neither)


@dataclass
class SystemView:
    """One memory system on one question: what it retrieved and what came of it."""

    system: str
    status: str | None = None
    error: str | None = None
    context_tokens: int | None = None
    n_units: int = 0
    units: list[RetrievedUnit] = field(default_factory=list)
    gold_ranks: dict[str, int | None] = field(default_factory=dict)  # gold label -> rank (None: not retrieved)
    answers: list[dict[str, Any]] = field(default_factory=list)  # reader, prediction, status, error, judgments


@dataclass
class QuestionView:
    partition_key: str
    question_id: str
    type_name: str
    question: str
    answer: str
    choices: list[str] | None
    correct_choice_index: int | None
    gold: list[str]  # gold evidence labels
    failed_stages: list[str]
    systems: list[SystemView]

    def judgment(self, key: str) -> dict[str, Any] | None:
        """The judgment row of ``system/reader/judge`` (None when there is none)."""
        for s in self.systems:
            for a in s.answers:
                for j in a["judgments"]:
                    if f"{s.system}/{a['reader']}/{j['judge']}" == key:
                        return j
        return None

    def verdicts(self) -> dict[str, str]:
        """``system/reader/judge`` -> MARK_* (the question index's badges)."""
        out: dict[str, str] = {}
        for s in self.systems:
            for a in s.answers:
                for j in a["judgments"]:
                    out[f"{s.system}/{a['reader']}/{j['judge']}"] = j["mark"]
        return out


def _cut(text: str | None, n: int = TEXT_CHARS) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _mark(status: str | None, correct: bool | None) -> str:
    if status == "failed":
        return MARK_FAILED
    if status is None:
        return MARK_MISSING
    if correct is None:
        return MARK_EXCLUDED
    return MARK_CORRECT if correct else MARK_WRONG


QUESTIONS_SQL = """
SELECT partition_key, question_id, coalesce(type_name, type_raw) AS type_name, question, answer, choices,
       correct_choice_index
FROM questions WHERE dataset = $ds ORDER BY record_index, partition_key
"""
EVIDENCE_SQL = """
SELECT e.partition_key, e.level, e.unit_id, coalesce(e.source_id, e.unit_id) AS label
FROM evidence e WHERE e.dataset = $ds
"""
_TOP_UNITS_SQL = """list_transform(list_filter(r.units, lambda u: u.rank <= $top), lambda u: {'rank': u.rank,
    'session_key': u.session_key, 'turn_ids': u.turn_ids, 'text': left(u."text", $chars + 1)}) AS top"""
RETRIEVALS_SQL = f"""
SELECT r.partition_key, r.unit AS system, r.status, r.error, r.context_tokens, len(r.units) AS n_units,
  {_TOP_UNITS_SQL}
FROM retrievals r WHERE r.dataset = $ds
"""
# ... and, where the dataset has evidence, each row's gold ranks: (gold unit id, the best rank of a
# retrieved unit holding it: its turn, or its session), for the gold ids some unit holds. Why in SQL:
# fetching every retrieved unit's turn ids into Python to find a handful of gold ids took LoCoMo's
# drill-down from ~0.3 to ~1.5 GB of RSS (full_context returns whole sessions). Why in the same scan:
# each scan of ``retrievals`` decodes every file's units again (~0.7 s CPU at 2,000 questions).
RETRIEVALS_GOLD_SQL = f"""
WITH gold AS (SELECT partition_key, list(DISTINCT unit_id) AS ids FROM evidence WHERE dataset = $ds GROUP BY ALL)
SELECT r.partition_key, r.unit AS system, r.status, r.error, r.context_tokens, len(r.units) AS n_units,
  {_TOP_UNITS_SQL},
  list_filter(list_transform(g.ids, lambda id: {{'unit_id': id, 'rank': list_min(list_transform(
    list_filter(r.units, lambda u: u.session_key = id OR list_contains(u.turn_ids, id)), lambda u: u.rank))}}),
    lambda found: found.rank IS NOT NULL) AS gold_ranks
FROM retrievals r LEFT JOIN gold g ON g.partition_key = r.partition_key WHERE r.dataset = $ds
"""
ANSWERS_SQL = """
SELECT partition_key, system, reader, status, error, left(prediction, 2000) AS prediction, invalid
FROM answers WHERE dataset = $ds
"""
JUDGMENTS_SQL = """
SELECT partition_key, system, reader, judge, metric, status, error, correct, score
FROM judgments WHERE dataset = $ds
"""
FAILED_SQL = "SELECT partition_key, stage FROM progress WHERE dataset = $ds AND status = 'failed'"
SOURCE_IDS_SQL = """
SELECT turn_id, source_id FROM turns WHERE dataset = $ds AND source_id IS NOT NULL
  AND turn_id IN (SELECT unnest($ids::VARCHAR[]))
"""
SESSION_IDS_SQL = """
SELECT session_key, source_session_id FROM sessions WHERE dataset = $ds AND source_session_id IS NOT NULL
  AND session_key IN (SELECT unnest($ids::VARCHAR[]))
"""


def _rows(con: duckdb.DuckDBPyConnection, present: set[str], table: str, sql: str, **params: Any) -> list[dict]:
    return query_rows(con, sql, params) if table in present else []  # type: ignore[arg-type]


def dataset_questions(con: duckdb.DuckDBPyConnection, dataset: str) -> list[QuestionView]:
    """Every question of ``dataset`` with its drill-down (empty when the dataset has no questions)."""
    present = view_names(con)
    ds = {"ds": dataset}
    questions = _rows(con, present, "questions", QUESTIONS_SQL, **ds)
    if not questions:
        return []
    gold_turns: dict[str, set[str]] = defaultdict(set)
    gold_sessions: dict[str, set[str]] = defaultdict(set)
    labels: dict[str, dict[str, dict[str, str]]] = {LEVEL_TURN: defaultdict(dict), LEVEL_SESSION: defaultdict(dict)}
    for e in _rows(con, present, "evidence", EVIDENCE_SQL, **ds):
        (gold_turns if e["level"] == LEVEL_TURN else gold_sessions)[e["partition_key"]].add(e["unit_id"])
        labels.get(e["level"], {}).setdefault(e["partition_key"], {})[e["unit_id"]] = e["label"]
    # the finest gold a question has: its evidence turns, else its evidence sessions (unit id -> label)
    gold_labels: dict[str, dict[str, str]] = defaultdict(dict)
    for pk in {*labels[LEVEL_TURN], *labels[LEVEL_SESSION]}:
        gold_labels[pk] = labels[LEVEL_TURN].get(pk) or labels[LEVEL_SESSION].get(pk, {})
    sql = RETRIEVALS_GOLD_SQL if "evidence" in present else RETRIEVALS_SQL
    retrievals = _rows(con, present, "retrievals", sql, top=TOP_UNITS, chars=TEXT_CHARS, **ds)
    found: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)  # (question, system) -> gold id -> rank
    for r in retrievals:
        ranks = found[(r["partition_key"], r["system"])]
        for g in r.get("gold_ranks") or []:
            best = ranks.get(g["unit_id"])
            ranks[g["unit_id"]] = g["rank"] if best is None else min(best, g["rank"])
    turn_ids = sorted({t for r in retrievals for u in r["top"] or [] for t in u["turn_ids"] or []})
    session_ids = sorted({u["session_key"] for r in retrievals for u in r["top"] or []})
    turn_src = dict(con.execute(SOURCE_IDS_SQL, {**ds, "ids": turn_ids}).fetchall()) if "turns" in present else {}
    sess_src = (
        dict(con.execute(SESSION_IDS_SQL, {**ds, "ids": session_ids}).fetchall()) if "sessions" in present else {}
    )
    by_pk_sys: dict[tuple[str, str], SystemView] = {}
    for r in retrievals:
        pk = r["partition_key"]
        view = SystemView(r["system"], r["status"], r["error"], r["context_tokens"], r["n_units"] or 0)
        view.units = [_unit(u, gold_turns[pk], gold_sessions[pk], turn_src, sess_src) for u in r["top"] or []]
        view.gold_ranks = _gold_ranks(found[(pk, r["system"])], gold_labels[pk])
        by_pk_sys[(pk, r["system"])] = view
    judgments: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for j in _rows(con, present, "judgments", JUDGMENTS_SQL, **ds):
        j["mark"] = _mark(j["status"], j["correct"])
        judgments[(j["partition_key"], j["system"], j["reader"])].append(j)
    agent_steps = drilldown_steps(con, dataset)  # agentic readers: steps and tool calls
    for a in _rows(con, present, "answers", ANSWERS_SQL, **ds):
        a["agent_steps"] = agent_steps.get((a["partition_key"], a["system"], a["reader"]), [])
        view = by_pk_sys.setdefault((a["partition_key"], a["system"]), SystemView(a["system"]))
        a["judgments"] = sorted(judgments[(a["partition_key"], a["system"], a["reader"])], key=lambda j: j["judge"])
        view.answers.append(a)
    failed: dict[str, list[str]] = defaultdict(list)
    for f in _rows(con, present, "progress", FAILED_SQL, **ds):
        failed[f["partition_key"]].append(f["stage"])
    systems = sorted({s for _, s in by_pk_sys})
    out = []
    for q in questions:
        pk = q["partition_key"]
        views = [by_pk_sys[(pk, s)] for s in systems if (pk, s) in by_pk_sys]
        for v in views:
            v.answers.sort(key=lambda a: a["reader"])
        out.append(
            QuestionView(
                partition_key=pk,
                question_id=q["question_id"],
                type_name=str(q["type_name"]),
                question=q["question"] or "",
                answer="" if q["answer"] is None else str(q["answer"]),
                choices=q["choices"],
                correct_choice_index=q["correct_choice_index"],
                gold=sorted(gold_labels[pk].values()),
                failed_stages=sorted(failed[pk]),
                systems=views,
            )
        )
    return out


def _unit(
    u: dict[str, Any], turns: set[str], sessions: set[str], turn_src: dict[str, str], sess_src: dict[str, str]
) -> RetrievedUnit:
    ids = list(u["turn_ids"] or [])
    session = sess_src.get(u["session_key"], u["session_key"])
    if len(ids) == 1:
        label = turn_src.get(ids[0], f"{session} turn {ids[0].rsplit(':', 1)[-1]}")
    elif not ids:  # a derived unit (session summary, note)
        label = f"{session} (derived)"
    else:
        label = f"{session} ({len(ids)} turns)"
    gold = LEVEL_TURN if turns & set(ids) else LEVEL_SESSION if u["session_key"] in sessions else ""
    return RetrievedUnit(rank=u["rank"], label=label, text=_cut(u["text"]), gold=gold)


def _gold_ranks(ranks: dict[str, int], labels: dict[str, str]) -> dict[str, int | None]:
    """Gold label -> the best rank at which any of its unit ids was found (RETRIEVALS_GOLD_SQL), None if never."""
    out: dict[str, int | None] = dict.fromkeys(labels.values())
    for unit_id, label in labels.items():
        rank = ranks.get(unit_id)
        if rank is not None:
            best = out[label]
            out[label] = rank if best is None else min(best, rank)
    return out
