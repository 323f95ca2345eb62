"""Views over the judge probes (``membench judge-probe``, pipeline/judges/probe_run.py).

- ``judge_probe_rates``: per dataset x judge x question type (+ ``(all)``): probes, failures, and the
  false-accept and false-reject rates (pipeline.metrics.bounds.error_rate) over the probes judged.
- ``judge_probe_kinds``: per dataset x judge x probe kind: how often the judge accepted it.
"""

from __future__ import annotations

import duckdb

from pipeline.metrics.bounds import FALSE_ACCEPT_RATE, FALSE_REJECT_RATE, error_rate_sql

ALL_TYPES = "(all)"
PROBE_VIEWS = ("judge_probe_rates", "judge_probe_kinds")

_JUDGED = "status = 'ok' AND verdict IS NOT NULL"
JUDGE_PROBE_RATES_SQL = f"""
CREATE OR REPLACE VIEW judge_probe_rates AS
WITH c AS (
  SELECT dataset, judge, metric, any_value(judge_model) AS judge_model,
    CASE WHEN grouping(type_raw) = 1 THEN '{ALL_TYPES}' ELSE type_raw END AS type_raw,
    CASE WHEN grouping(type_name) = 1 THEN '{ALL_TYPES}' ELSE type_name END AS type_name,
    count(*) AS n_probes,
    count(DISTINCT partition_key) AS n_questions,
    count(*) FILTER (WHERE status = 'failed') AS n_failed,
    count(*) FILTER (WHERE status = 'ok' AND verdict IS NULL) AS n_excluded,
    count(*) FILTER (WHERE NOT expected_correct AND {_JUDGED}) AS n_wrong_judged,
    count(*) FILTER (WHERE NOT expected_correct AND {_JUDGED} AND verdict) AS n_false_accept,
    count(*) FILTER (WHERE expected_correct AND {_JUDGED}) AS n_right_judged,
    count(*) FILTER (WHERE expected_correct AND {_JUDGED} AND NOT verdict) AS n_false_reject
  FROM judge_probes
  GROUP BY GROUPING SETS ((dataset, judge, metric, type_raw, type_name), (dataset, judge, metric))
)
SELECT *, {error_rate_sql("n_false_accept", "n_wrong_judged")} AS {FALSE_ACCEPT_RATE},
  {error_rate_sql("n_false_reject", "n_right_judged")} AS {FALSE_REJECT_RATE}
FROM c
ORDER BY dataset, judge, type_raw = '{ALL_TYPES}' DESC, type_raw
"""

JUDGE_PROBE_KINDS_SQL = f"""
CREATE OR REPLACE VIEW judge_probe_kinds AS
SELECT dataset, judge, metric, probe, any_value(expected_correct) AS expected_correct,
  count(*) AS n_probes,
  count(*) FILTER (WHERE status = 'failed') AS n_failed,
  count(*) FILTER (WHERE {_JUDGED}) AS n_judged,
  count(*) FILTER (WHERE {_JUDGED} AND verdict) AS n_accepted,
  {error_rate_sql(f"count(*) FILTER (WHERE {_JUDGED} AND verdict)", f"count(*) FILTER (WHERE {_JUDGED})")}
    AS accept_rate
FROM judge_probes
GROUP BY ALL
ORDER BY dataset, judge, expected_correct, probe
"""


def create_probe_views(con: duckdb.DuckDBPyConnection, tables: set[str], parquet: str) -> list[str]:
    """The probe views, once ``membench judge-probe`` has written a ``judge_probes`` table."""
    if "judge_probes" not in tables:
        return []
    con.execute(JUDGE_PROBE_RATES_SQL)
    con.execute(JUDGE_PROBE_KINDS_SQL)
    return list(PROBE_VIEWS)
