"""Retrieval metrics of agentic answers: the ``agentic_retrieval_metrics`` table.

An agentic reader retrieves with its own queries, so the ``retrievals`` row of its system says
nothing about what it saw. Its answer's trace keeps two rankings, each scored with the same
pinned metric functions and gold as ``retrieval_metrics`` (pipeline.report.retrieval_table
``metric_rows``), one row per (question, system, reader, ranking, level):

- ``union``: every unit any search returned, in first-seen order; its ``evidence_recall_context``
  is the evidence recall over everything the agent saw (the headline number), and the @k columns
  rank the union in the order the agent met the units;
- ``first_query``: the ranking of the agent's first search (comparable with the plain system).

A failed answer gets rows with outcome ``retrieval_failed`` and its error, so failures are counted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from pipeline.config.model import BenchmarkConfig
from pipeline.metrics.retrieval import K_VALUES, Gold, gold_protocol
from pipeline.report.retrieval_table import QuestionInfo, load_gold, load_questions, metric_rows, metrics_schema
from pipeline.report.sql import query_rows, view_names
from pipeline.store.results import ResultStore

TABLE = "agentic_retrieval_metrics"
RANKING_UNION = "union"
RANKING_FIRST_QUERY = "first_query"
RANKINGS = (RANKING_UNION, RANKING_FIRST_QUERY)
AGENTIC_KIND = "agentic"

# failed rows carry no payload: system and reader come from the unit "<system>/<reader>"
_ANSWERS_SQL = """
SELECT partition_key, question_id, regexp_extract(unit, '^(.*)/([^/]*)$', 1) AS system,
       regexp_extract(unit, '^(.*)/([^/]*)$', 2) AS reader, status, error, agent_trace
FROM answers WHERE dataset = ? AND regexp_extract(unit, '^(.*)/([^/]*)$', 2) IN (SELECT unnest(?))
ORDER BY partition_key, unit
"""


def schema(ks: Sequence[int] = K_VALUES) -> pa.Schema:
    base = metrics_schema(ks)
    return pa.schema([*base, pa.field("reader", pa.string()), pa.field("ranking", pa.string())])


def rankings(agent_trace: str | None) -> dict[str, list[dict[str, Any]]]:
    """ranking name -> its units (unit_id, rank, session_key, turn_ids) from an answer's trace."""
    trace = json.loads(agent_trace) if agent_trace else {}
    return {name: list(trace.get(name) or ()) for name in RANKINGS}


def answer_metric_rows(
    answer: Mapping[str, Any],
    question: QuestionInfo | None,
    gold: Gold,
    protocol: str,
    dataset: str,
    ks: Sequence[int] = K_VALUES,
) -> list[dict[str, Any]]:
    """The rows of one agentic answer: each ranking x each level, scored like a retrievals row."""
    rows = []
    for name, units in rankings(answer.get("agent_trace")).items():
        retrieval = {
            "partition_key": answer["partition_key"],
            "question_id": answer["question_id"],
            "system": answer["system"],
            "system_kind": AGENTIC_KIND,
            "status": answer["status"],
            "error": answer.get("error"),
            "units": units,
            "trimmed_units": 0,  # the agent saw every unit it retrieved
            "notes": None,
            "context_tokens": None,
            "retrieval_latency_s": None,
        }
        for row in metric_rows(retrieval, question, gold, protocol, dataset, ks):
            rows.append({**row, "reader": answer["reader"], "ranking": name})
    return rows


def build_table(
    con: duckdb.DuckDBPyConnection, dataset: str, protocol: str, readers: Sequence[str], ks: Sequence[int] = K_VALUES
) -> pa.Table:
    """The metric rows of every answer of the agentic ``readers`` (names) for ``dataset``."""
    out = schema(ks)
    if not readers or "answers" not in view_names(con) or not _has_trace(con):
        return out.empty_table()
    answers = query_rows(con, _ANSWERS_SQL, [dataset, list(readers)])
    if not answers:
        return out.empty_table()
    questions = load_questions(con, dataset) if "questions" in view_names(con) else {}
    gold = load_gold(con, dataset, protocol)
    empty = Gold(frozenset(), frozenset())
    rows: list[dict[str, Any]] = []
    for a in answers:
        key = a["partition_key"]
        rows += answer_metric_rows(a, questions.get(key), gold.get(key, empty), protocol, dataset, ks)
    return pa.Table.from_pylist(rows, schema=out)


def _has_trace(con: duckdb.DuckDBPyConnection) -> bool:
    cols = {r[0] for r in con.execute("SELECT column_name FROM (DESCRIBE answers)").fetchall()}
    return "agent_trace" in cols


def table_path(store: ResultStore, dataset: str) -> Path:
    return store.parquet_root / TABLE / f"{dataset}.parquet"


def write_tables(store: ResultStore, cfg: BenchmarkConfig) -> int:
    """Rebuild ``agentic_retrieval_metrics`` for every dataset of the run; rows written (0, and no
    connection opened, when the config has no agentic reader)."""
    readers = [r.name for r in cfg.readers if r.kind == AGENTIC_KIND]
    if not readers:
        return 0
    total = 0
    with store.connect() as con:
        for ds in cfg.datasets:
            table = build_table(con, ds.name, gold_protocol(ds.loader), readers, cfg.retrieval_k)
            path = table_path(store, ds.name)
            if table.num_rows:
                store.write(path, table)
            elif path.exists():
                path.unlink()
            total += table.num_rows
    return total
