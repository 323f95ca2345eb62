"""The ``retrieval_metrics`` table: one row per (question, memory system, level).

Why a stored table and not only a view: the metrics are pinned Python functions
(pipeline.metrics.retrieval) and the gold derivation needs the LongMemEval rules; storing their
per-question output lets anyone re-aggregate in SQL (``retrieval_report`` view, paired
comparisons) without re-running Python. Every (question, system) that has a retrieval row gets a
row per level, with an ``outcome``: scored, excluded (abstention / no gold) or retrieval failed,
so exclusions and failures are counted instead of vanishing.

LoCoMo evidence datasets also get ``evidence_recall_official_context`` at turn level: LoCoMo's own
evidence recall (pipeline.metrics.locomo_evidence) of the question's raw evidence strings
(``questions.evidence_raw``) against the raw dialogue ids of the reader's context, set on every
retrieval that succeeded (the repaired ``evidence_recall_context`` excludes questions without
repaired evidence; the official one scores them 1, or 0 when their evidence names no turn).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.core.records import LEVEL_SESSION, LEVEL_TURN, EvidenceRow
from pipeline.metrics.locomo_evidence import EVIDENCE_RECALL_OFFICIAL_CONTEXT, locomo_evidence_recall_official
from pipeline.metrics.retrieval import (
    K_VALUES,
    LEVELS,
    OUTCOME_EXCLUDED_NO_SOURCE_IDS,
    OUTCOME_RETRIEVAL_FAILED,
    OUTCOME_SCORED,
    PROTOCOL_EVIDENCE,
    PROTOCOL_LONGMEMEVAL,
    Gold,
    RankedUnits,
    UnitRef,
    Units,
    context_size,
    evidence_gold,
    exclusion,
    lme_gold,
    metric_columns,
    ranked_units,
    ranking_at,
    score_ranking,
)
from pipeline.report.sql import query_rows, view_names
from pipeline.store.results import ResultStore

TABLE = "retrieval_metrics"
S = TypeVar("S")
UNKNOWN_TYPE = "(unknown)"

_BASE_FIELDS: list[tuple[str, pa.DataType]] = [
    ("dataset", pa.string()),
    ("partition_key", pa.string()),
    ("question_id", pa.string()),
    ("type_raw", pa.string()),
    ("type_name", pa.string()),
    ("system", pa.string()),
    ("system_kind", pa.string()),
    ("level", pa.string()),
    ("gold_protocol", pa.string()),
    ("outcome", pa.string()),
    ("error", pa.string()),
    ("n_gold", pa.int64()),
    ("n_ranked", pa.int64()),
    ("n_context_units", pa.int64()),
    ("context_tokens", pa.int64()),
    ("retrieval_latency_s", pa.float64()),
]


def metrics_schema(ks: Sequence[int] = K_VALUES) -> pa.Schema:
    """The table's schema for cut-offs ``ks`` (one column per metric and k)."""
    columns = (*metric_columns(ks), EVIDENCE_RECALL_OFFICIAL_CONTEXT)
    return pa.schema(_BASE_FIELDS + [(c, pa.float64()) for c in columns])


RETRIEVAL_METRICS_SCHEMA = metrics_schema(K_VALUES)

_RETRIEVALS_SQL = """
SELECT partition_key, question_id, unit AS system, system_kind, status, error,
       retrieval_latency_s, context_tokens, trimmed_units, notes,
       list_transform(units, lambda u: {'rank': u.rank, 'session_key': u.session_key,
                                        'turn_ids': u.turn_ids}) AS units
FROM retrievals WHERE dataset = ? ORDER BY partition_key, unit
"""
# only what the gold derivation reads (pipeline.metrics.retrieval.TurnLike): the turns' text is most of the table
_LME_TURNS_SQL = """
SELECT session_key, turn_id, role, has_answer FROM turns WHERE dataset = ? AND session_key IN
  (SELECT unit_id FROM evidence WHERE dataset = ? AND level = 'session')
"""


def table_path(store: ResultStore, dataset: str) -> Path:
    return store.parquet_root / TABLE / f"{dataset}.parquet"


# bump when a metric definition or the gold derivation changes: stored tables are then rebuilt
METRICS_VERSION = 4  # 2: LongMemEval's official turn->session conversion; session_dedup level
# 3: evidence_recall_official_context (LoCoMo's official evidence recall over the context)
# 4: level session identifies sessions by the haystack's session id; session_keyed = the former session
_INPUT_TABLES = ("questions", "turns", "evidence", "haystacks")


def input_fingerprint(store: ResultStore, dataset: str, protocol: str, ks: Sequence[int] = K_VALUES) -> str:
    """Hash of what ``dataset``'s metric table is computed from: every retrieval file of the
    dataset and its canonical questions / turns / evidence / haystacks (path, size, mtime), the gold
    protocol, the cut-offs ``ks`` and METRICS_VERSION.

    Why: recomputing the metrics of thousands of questions takes most of an otherwise free
    re-run; files are only ever replaced by atomic rename, so an unchanged (size, mtime) set
    means unchanged inputs (the rule ``make`` relies on).
    """
    files = sorted((store.parquet_root / "retrievals").glob(f"{dataset}__*.parquet"))
    files += [store.canonical_path(dataset, t) for t in _INPUT_TABLES]
    h = hashlib.sha256(f"{METRICS_VERSION}|{protocol}|k={','.join(map(str, ks))}".encode())
    for f in files:
        st = f.stat() if f.exists() else None
        h.update(f"|{f.name}:{st.st_size if st else -1}:{st.st_mtime_ns if st else -1}".encode())
    return h.hexdigest()


def fingerprint_path(store: ResultStore, dataset: str) -> Path:
    return table_path(store, dataset).with_suffix(".inputs")


def stored_table_if_current(store: ResultStore, dataset: str, fingerprint: str) -> pa.Table | None:
    """The stored metric table when it was computed from exactly these inputs, else None."""
    path, mark = table_path(store, dataset), fingerprint_path(store, dataset)
    if not (path.exists() and mark.exists()) or mark.read_text().strip() != fingerprint:
        return None
    return pq.read_table(path)


class GoldTurn(NamedTuple):
    """What the LongMemEval gold derivation reads of a turn (TurnLike), not the whole TurnRow.

    Why: building TurnRows meant reading every answer session's text, ~0.2 s of the report on
    LongMemEval_S for values the gold never looks at."""

    turn_id: str
    role: str
    has_answer: bool


def load_gold(con: duckdb.DuckDBPyConnection, dataset: str, protocol: str) -> dict[str, Gold]:
    """partition_key -> Gold, derived by the dataset's protocol from canonical evidence (+ turns)."""
    if "evidence" not in view_names(con):
        return {}
    rows = query_rows(con, "SELECT * FROM evidence WHERE dataset = ?", [dataset])
    by_key: dict[str, list[EvidenceRow]] = defaultdict(list)
    for r in rows:
        by_key[r["partition_key"]].append(EvidenceRow(**r))
    if protocol != PROTOCOL_LONGMEMEVAL:
        return {k: evidence_gold(v) for k, v in by_key.items()}
    turns: dict[str, list[GoldTurn]] = defaultdict(list)
    for session_key, turn_id, role, has_answer in con.execute(_LME_TURNS_SQL, [dataset, dataset]).fetchall():
        turns[session_key].append(GoldTurn(turn_id, role, has_answer))
    source_ids = _haystack_session_ids(con, dataset)
    return {k: lme_gold(v, turns, source_ids.get(k)) for k, v in by_key.items()}


_SOURCE_IDS_SQL = """
SELECT q.partition_key, h.session_key, h.source_session_id FROM questions q
JOIN haystacks h ON h.dataset = q.dataset AND h.haystack_id = q.haystack_id WHERE q.dataset = ?
"""


def _haystack_session_ids(con: duckdb.DuckDBPyConnection, dataset: str) -> dict[str, dict[str, str]]:
    """partition_key -> {session_key: the haystack's session id}: how the official LongMemEval
    code identifies sessions (level ``session``)."""
    if not {"questions", "haystacks"} <= set(view_names(con)):
        return {}
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for key, session_key, source_id in con.execute(_SOURCE_IDS_SQL, [dataset]).fetchall():
        out[key][session_key] = source_id
    return out


@dataclass(frozen=True)
class QuestionInfo:
    question_id: str
    type_raw: str
    type_name: str
    evidence_raw: tuple[str, ...] | None = None  # LoCoMo's evidence strings as given


def load_questions(con: duckdb.DuckDBPyConnection, dataset: str) -> dict[str, QuestionInfo]:
    cols = {r[0] for r in con.execute("SELECT column_name FROM (DESCRIBE questions)").fetchall()}
    raw = "evidence_raw" if "evidence_raw" in cols else "NULL"  # tables converted before LOADER_VERSION 2
    sql = f"SELECT partition_key, question_id, type_raw, type_name, {raw} FROM questions WHERE dataset = ?"
    return {
        r[0]: QuestionInfo(r[1], r[2], r[3], None if r[4] is None else tuple(r[4]))
        for r in con.execute(sql, [dataset]).fetchall()
    }


@dataclass(frozen=True)
class DialogueIds:
    """How the official LoCoMo recall names context units: turn_id -> raw dialogue id (``D3:7``,
    turns.source_id) and session_key -> ``S<n>`` (haystacks.source_session_id ``session_<n>``)."""

    turns: Mapping[str, str]
    sessions: Mapping[str, str]

    def context_ids(self, kept: Units) -> list[str]:
        """Dialogue ids of the context's turns in rank order; ``S<n>`` ids when it holds no turn."""
        ranked = ranked_units(kept)
        turns = [self.turns[t] for t in ranked.turn_ids if t in self.turns]
        if turns or not len(ranked):
            return list(dict.fromkeys(turns))
        return list(dict.fromkeys(self.sessions[k] for k in ranked.session_keys if k in self.sessions))


_DIALOGUE_TURNS_SQL = "SELECT turn_id, source_id FROM turns WHERE dataset = ? AND source_id IS NOT NULL"
_DIALOGUE_SESSIONS_SQL = "SELECT DISTINCT session_key, source_session_id FROM haystacks WHERE dataset = ?"


def load_dialogue_ids(con: duckdb.DuckDBPyConnection, dataset: str) -> DialogueIds:
    names = view_names(con)
    turns = dict(con.execute(_DIALOGUE_TURNS_SQL, [dataset]).fetchall()) if "turns" in names else {}
    sessions: dict[str, str] = {}
    if "haystacks" in names:
        for key, source in con.execute(_DIALOGUE_SESSIONS_SQL, [dataset]).fetchall():
            if source and source.startswith("session_"):
                sessions[key] = "S" + source.removeprefix("session_")
    return DialogueIds(turns, sessions)


def _units(raw: Sequence[Mapping[str, Any]] | None) -> list[UnitRef]:
    return [UnitRef(int(u["rank"]), u["session_key"], tuple(u["turn_ids"] or ())) for u in raw or ()]


def unit_columns(column: pa.ChunkedArray) -> list[RankedUnits]:
    """Each row's ``units`` (list of {rank, session_key, turn_ids}) as ``RankedUnits.of(_units(row))``.

    Why column-wise: a ``UnitRef`` per unit (~150k on LongMemEval_S) cost ~0.15 s of the report and
    each ranking sorted them again; a row whose ranks already ascend (every ranked system writes
    them so) is a slice of the chunk's flat columns. A chunk holding a null unit or rank takes
    ``_units``'s own path (and its error); a row out of rank order is sorted as ``RankedUnits.of`` sorts."""
    out: list[RankedUnits] = []
    for chunk in column.chunks:
        items = chunk.flatten()  # the rows' units, without what a null list spans or a slice leaves out
        if items.null_count or items.field("rank").null_count:
            out += [RankedUnits.of(_units(raw)) for raw in chunk.to_pylist()]
        else:
            out += _chunk_units(chunk, items)
    return out


def _chunk_units(chunk: pa.ListArray, items: pa.StructArray) -> list[RankedUnits]:
    """``unit_columns`` of one chunk without null units: row i's units are ``items[rows[i]:rows[i + 1]]``."""
    rows = _offsets(chunk)
    turn_lists = items.field("turn_ids")
    turns, ends = turn_lists.flatten().to_pylist(), _offsets(turn_lists)  # unit j's turns: turns[ends[j]:ends[j + 1]]
    ranks, keys = items.field("rank").to_pylist(), items.field("session_key").to_pylist()
    out = []
    for a, b in pairwise(rows):
        row_ranks = ranks[a:b]
        if all(x <= y for x, y in pairwise(row_ranks)):
            first = ends[a]
            out.append(RankedUnits(keys[a:b], turns[first : ends[b]], [e - first for e in ends[a : b + 1]]))
        else:
            refs = [UnitRef(int(ranks[j]), keys[j], tuple(turns[ends[j] : ends[j + 1]])) for j in range(a, b)]
            out.append(RankedUnits.of(refs))
    return out


def _offsets(lists: pa.ListArray) -> list[int]:
    """Where each list starts in ``lists.flatten()``, and its end: a null list is empty."""
    return [0, *accumulate(pc.list_value_length(lists).fill_null(0).to_pylist())]


def _session_ids_only(notes: str | None) -> bool:
    """The system said its items map to sessions only (``notes.source_ids == "session"``, pipeline/products)."""
    if not notes:
        return False
    try:
        return bool(json.loads(notes).get("source_ids") == "session")
    except (ValueError, AttributeError):
        return False


def _units_total(notes: str | None) -> int | None:
    try:
        value = json.loads(notes).get("units_total") if notes else None
    except (ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int) else None


def metric_rows(
    retrieval: Mapping[str, Any],
    question: QuestionInfo | None,
    gold: Gold,
    protocol: str,
    dataset: str,
    ks: Sequence[int] = K_VALUES,
    dialogue: DialogueIds | None = None,
    units: Units | None = None,
) -> list[dict[str, Any]]:
    """The rows (one per level) of one retrievals row: scored, excluded or failed.

    ``dialogue`` (LoCoMo evidence datasets) adds the official evidence recall at turn level.
    ``units``: the row's units already made (``unit_columns``), else made from ``retrieval["units"]``."""
    units = ranked_units(_units(retrieval.get("units")) if units is None else units)
    trimmed, total = int(retrieval.get("trimmed_units") or 0), _units_total(retrieval.get("notes"))
    kept = units.head(context_size(len(units), trimmed, total))
    qid = question.question_id if question else retrieval["question_id"]
    rows = []
    for level in LEVELS:
        gold_ids = gold.at(level)
        outcome = exclusion(protocol, qid, gold_ids)
        if outcome is None:
            outcome = OUTCOME_SCORED if retrieval["status"] == "ok" else OUTCOME_RETRIEVAL_FAILED
        if outcome == OUTCOME_SCORED and level == LEVEL_TURN and _session_ids_only(retrieval.get("notes")):
            outcome = OUTCOME_EXCLUDED_NO_SOURCE_IDS  # not a zero: the system cannot say which turns
        ranking = ranking_at(level, units, gold)
        row: dict[str, Any] = {
            "dataset": dataset,
            "partition_key": retrieval["partition_key"],
            "question_id": qid,
            "type_raw": question.type_raw if question else UNKNOWN_TYPE,
            "type_name": question.type_name if question else UNKNOWN_TYPE,
            "system": retrieval["system"],
            "system_kind": retrieval.get("system_kind"),
            "level": level,
            "gold_protocol": protocol,
            "outcome": outcome,
            "error": retrieval.get("error"),
            "n_gold": len(gold_ids),
            "n_ranked": len(ranking),
            "n_context_units": len(kept),
            "context_tokens": retrieval.get("context_tokens"),
            "retrieval_latency_s": retrieval.get("retrieval_latency_s"),
        }
        if outcome == OUTCOME_SCORED:
            row.update(score_ranking(ranking, ranking_at(level, kept, gold), gold_ids, ks))
        raw = question.evidence_raw if question else None
        turns_known = retrieval["status"] == "ok" and outcome != OUTCOME_EXCLUDED_NO_SOURCE_IDS
        if level == LEVEL_TURN and dialogue is not None and raw is not None and turns_known:
            row[EVIDENCE_RECALL_OFFICIAL_CONTEXT] = locomo_evidence_recall_official(raw, dialogue.context_ids(kept))
        rows.append(row)
    return rows


def build_dataset_table(
    con: duckdb.DuckDBPyConnection, dataset: str, protocol: str, ks: Sequence[int] = K_VALUES
) -> pa.Table:
    """All metric rows of one dataset at cut-offs ``ks`` (empty table when it has no retrievals yet)."""
    schema = metrics_schema(ks)
    if "retrievals" not in view_names(con):
        return schema.empty_table()
    questions = load_questions(con, dataset) if "questions" in view_names(con) else {}
    gold = load_gold(con, dataset, protocol)
    has_raw = protocol == PROTOCOL_EVIDENCE and any(q.evidence_raw is not None for q in questions.values())
    dialogue = load_dialogue_ids(con, dataset) if has_raw else None
    empty = Gold(frozenset(), frozenset())
    rows: list[dict[str, Any]] = []
    retrievals = con.sql(_RETRIEVALS_SQL, params=[dataset]).to_arrow_table()
    units = unit_columns(retrievals.column("units"))
    for r, refs in zip(retrievals.drop_columns(["units"]).to_pylist(), units, strict=True):
        key = r["partition_key"]
        rows += metric_rows(r, questions.get(key), gold.get(key, empty), protocol, dataset, ks, dialogue, refs)
    return pa.Table.from_pylist(rows, schema=schema)


def outcome_counts(table: pa.Table) -> dict[str, int]:
    """outcome -> number of (question, system) pairs, at session level (one count per pair)."""
    counts: dict[str, int] = defaultdict(int)
    for level, outcome in zip(table.column("level").to_pylist(), table.column("outcome").to_pylist(), strict=True):
        if level == LEVEL_SESSION:
            counts[outcome] += 1
    return dict(counts)
