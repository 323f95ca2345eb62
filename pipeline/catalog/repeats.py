"""``repeat_report`` / ``judge_repeat_report``: a reader answered (a judge judged) every question
N times (its ``repeats``); how stable is it?

Why a view of its own: a single run's accuracy hides sampling noise. Independent audits report
several runs and a majority vote; the Zep paper reports mean +- sd over 10 runs. Repeat r of reader
``x`` is the unit ``<system>/x~r`` (r >= 2; repeat 1 is plain ``x``, pipeline/readers/run.py), so
each repeat is also its own row of ``accuracy_report``. Here, per dataset x system x reader x judge
metric with at least two repeats:

- ``repeat_accuracies``: accuracy of each repeat (n_correct / n_scored), in repeat order;
- ``mean_accuracy`` and ``sd_accuracy``: their mean and SAMPLE standard deviation (n - 1);
- ``majority_accuracy``: per question, correct when MORE than half of the repeats that scored it
  are correct (a tie is not a majority), averaged over the questions scored by at least one repeat.
Failed answers or judgments are counted apart (``n_failed``) and are never a vote.
``judge_repeat_report`` is the same over a judge's repeats (``<answer unit>/<judge>~r``): judge noise
on identical answers.
"""

from __future__ import annotations

import duckdb

from pipeline.catalog.report import OUTCOME_ANSWER_FAILED, OUTCOME_JUDGMENT_FAILED, OUTCOME_SCORED
from pipeline.core.units import REPEAT_SEP

_SCORED = "outcome = '" + OUTCOME_SCORED + "' AND correct IS NOT NULL"
# view -> (the repeated column, the column kept as is)
REPEAT_VIEWS: dict[str, tuple[str, str]] = {
    "repeat_report": ("reader", "judge"),
    "judge_repeat_report": ("judge", "reader"),
}


def repeat_report_sql(view: str) -> str:
    """The per-repeat statistics of the repeated ``reader`` (or ``judge``), the other column as is."""
    side, other = REPEAT_VIEWS[view]
    keys = f"dataset, system, base, {other}, metric"
    failed = f"outcome IN ('{OUTCOME_ANSWER_FAILED}', '{OUTCOME_JUDGMENT_FAILED}')"
    return f"""
CREATE OR REPLACE VIEW {view} AS
WITH o AS (
  SELECT *, split_part({side}, '{REPEAT_SEP}', 1) AS base,
    coalesce(TRY_CAST(nullif(split_part({side}, '{REPEAT_SEP}', 2), '') AS INTEGER), 1) AS repeat
  FROM judgment_outcomes
),
multi AS (SELECT {keys} FROM o GROUP BY ALL HAVING count(DISTINCT repeat) > 1),
per_repeat AS (
  SELECT {keys}, repeat,
    count(*) FILTER (WHERE {_SCORED}) AS n_scored,
    count(*) FILTER (WHERE {_SCORED} AND correct) AS n_correct,
    count(*) FILTER (WHERE {failed}) AS n_failed
  FROM o JOIN multi USING ({keys}) GROUP BY ALL
),
acc AS (SELECT *, n_correct::DOUBLE / nullif(n_scored, 0) AS accuracy FROM per_repeat),
votes AS (
  SELECT {keys}, partition_key, count(*) AS n_votes, count(*) FILTER (WHERE correct) AS n_yes
  FROM o JOIN multi USING ({keys}) WHERE {_SCORED} GROUP BY ALL
),
majority AS (
  SELECT {keys}, count(*) AS n_questions_voted,
    avg(CASE WHEN 2 * n_yes > n_votes THEN 1.0 ELSE 0.0 END) AS majority_accuracy
  FROM votes GROUP BY ALL
)
SELECT a.dataset, a.system, {"a.base AS reader, a.judge" if side == "reader" else "a.reader, a.base AS judge"},
  a.metric, count(*) AS n_repeats,
  list(a.accuracy ORDER BY a.repeat) AS repeat_accuracies, list(a.n_scored ORDER BY a.repeat) AS repeat_n_scored,
  sum(a.n_failed) AS n_failed, avg(a.accuracy) AS mean_accuracy, stddev_samp(a.accuracy) AS sd_accuracy,
  any_value(m.majority_accuracy) AS majority_accuracy, any_value(m.n_questions_voted) AS n_questions_voted
FROM acc a LEFT JOIN majority m USING ({keys})
GROUP BY a.dataset, a.system, a.base, a.{other}, a.metric
ORDER BY a.dataset, a.metric, judge, reader, a.system
"""


REPEAT_REPORT_SQL = repeat_report_sql("repeat_report")


def create_repeat_views(con: duckdb.DuckDBPyConnection, tables: set[str], parquet: str) -> list[str]:
    """``repeat_report`` / ``judge_repeat_report`` over ``judgment_outcomes`` (skipped until it exists)."""
    if "judgment_outcomes" not in tables:
        return []
    for view in REPEAT_VIEWS:
        con.execute(repeat_report_sql(view))
    return list(REPEAT_VIEWS)
