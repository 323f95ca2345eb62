"""``wrong_answer_causes``: per dataset x system x reader x judge metric x question type (+ ``(all)``),
the wrong verdicts split by where they were lost (pipeline/metrics/losses.py)."""

from __future__ import annotations

import duckdb

from pipeline.metrics.losses import (
    CAUSE_NOT_RETRIEVED,
    CAUSE_RETRIEVED_WRONG,
    CAUSE_STRING_RIGHT,
    CAUSE_UNKNOWN,
    STRING_METRICS,
    loss_cause_sql,
)

ALL_TYPES = "(all)"
LOSS_VIEWS = ("wrong_answer_causes",)


def _sql(has_retrieval: bool) -> str:
    strings = ", ".join(f"'{m}'" for m in STRING_METRICS)
    # a string metric's own wrong verdicts are never "right by a string metric"
    string_right = f"coalesce(s.string_right, false) AND w.metric NOT IN ({strings})"
    evidence = (
        "SELECT partition_key, system, evidence_recall_context FROM retrieval_metrics "
        "WHERE level = 'turn' AND outcome = 'scored'"
        if has_retrieval
        else "SELECT NULL::VARCHAR AS partition_key, NULL::VARCHAR AS system, NULL::DOUBLE AS evidence_recall_context "
        "WHERE false"
    )
    return f"""
CREATE OR REPLACE VIEW wrong_answer_causes AS
WITH wrong AS (
  SELECT * FROM judgment_outcomes WHERE outcome = 'scored' AND correct = false
),
strings AS (
  SELECT partition_key, system, reader, bool_or(correct) AS string_right
  FROM judgment_outcomes WHERE outcome = 'scored' AND metric IN ({strings}) GROUP BY ALL
),
ev AS ({evidence}),
caused AS (
  SELECT w.dataset, w.system, w.reader, w.judge, w.metric, w.type_raw, w.type_name,
    {loss_cause_sql(string_right, "ev.evidence_recall_context")} AS cause
  FROM wrong w
  LEFT JOIN strings s ON s.partition_key = w.partition_key AND s.system = w.system AND s.reader = w.reader
  LEFT JOIN ev ON ev.partition_key = w.partition_key AND ev.system = w.system
)
SELECT dataset, system, reader, judge, metric,
  CASE WHEN grouping(type_raw) = 1 THEN '{ALL_TYPES}' ELSE type_raw END AS type_raw,
  CASE WHEN grouping(type_name) = 1 THEN '{ALL_TYPES}' ELSE type_name END AS type_name,
  count(*) AS n_wrong,
  count(*) FILTER (WHERE cause = '{CAUSE_NOT_RETRIEVED}') AS n_{CAUSE_NOT_RETRIEVED},
  count(*) FILTER (WHERE cause = '{CAUSE_RETRIEVED_WRONG}') AS n_{CAUSE_RETRIEVED_WRONG},
  count(*) FILTER (WHERE cause = '{CAUSE_STRING_RIGHT}') AS n_{CAUSE_STRING_RIGHT},
  count(*) FILTER (WHERE cause = '{CAUSE_UNKNOWN}') AS n_{CAUSE_UNKNOWN}
FROM caused
GROUP BY GROUPING SETS ((dataset, system, reader, judge, metric, type_raw, type_name),
                        (dataset, system, reader, judge, metric))
ORDER BY dataset, metric, judge, reader, system, type_raw = '{ALL_TYPES}' DESC, type_raw
"""


def create_loss_views(con: duckdb.DuckDBPyConnection, tables: set[str], parquet: str) -> list[str]:
    """``wrong_answer_causes`` once the accuracy views exist (it reads judgment_outcomes)."""
    if "judgment_outcomes" not in tables:
        return []
    con.execute(_sql("retrieval_metrics" in tables))
    return list(LOSS_VIEWS)
