"""The benchmarks' official aggregate tables as catalog views.

Why views of their own: a published LongMemEval or LoCoMo table is not a plain mean per type.
LongMemEval's metrics printer (xiaowu0162/LongMemEval ``src/evaluation/print_qa_metrics.py``)
reports six per-type accuracies, their unweighted mean (task-averaged), the overall accuracy and
the abstention accuracy; LoCoMo's stats script (snap-research/locomo, branch ``code``,
``task_eval/evaluation_stats.py`` ``analyze_aggr_acc``) prints categories in the order 4, 1, 2, 3, 5,
an overall over all of them, recall per category, and accuracy by how far back the oldest evidence
lies (1K-token bins). These views compute exactly those, from the stored rows.

Views (one definition each, also in pipeline/report/glossary.py):
- ``lme_official_accuracy``: per dataset x system x reader x judge (LongMemEval judges): one row
  per question type in the printer's order, then ``task_averaged`` (mean of the six type
  accuracies; NULL unless all six have scored questions, as the printer's mean of a NaN is NaN),
  ``overall`` (all scored questions) and ``abstention`` (questions whose id contains ``_abs``).
- ``locomo_official_categories``: per dataset x system x reader x judge (LoCoMo judges): one row
  per category in the official order 4, 1, 2, 3, 5 (mean of the judge's score), ``overall``
  (all categories) and ``overall_without_5`` (categories 1-4, the protocol most papers report).
- ``locomo_official_recall``: per dataset x system: the official recall per category = sum of the
  per-question official evidence recall over questions WITH evidence / all questions of the category,
  and ``overall`` (sum over categories / all questions).
- ``beam_official_abilities`` (pipeline/catalog/official_beam.py): BEAM's report_results.py table,
  per ability: the mean over chats of each chat's mean, then the average of the ten abilities.
- ``locomo_official_by_distance``: per dataset x system x reader x judge x category x bin:
  bin = ceil(T / 1000), T = the conversation's whitespace-token count up to and including the
  oldest evidence turn (earliest session, then its earliest dialogue), tokens of a turn =
  ``len((speaker + ': ' + text + '\\n').split())``.

Deviations, on purpose (named in docs/design/protocols.md): the denominators are SCORED questions (a
failed answer or judgment is reported apart in ``n_failed``, never counted as a zero as the
official scripts would); the stats script reads ``clean_text`` (or ``compressed_text``), which the
released locomo10.json does not have: its ``text`` field is read instead (and the release has no
``img_file`` key, so no caption is counted, as the script would do).
"""

from __future__ import annotations

import duckdb

from pipeline.catalog.official_beam import beam_official_abilities_sql
from pipeline.catalog.report import OUTCOME_ANSWER_FAILED, OUTCOME_JUDGMENT_FAILED, OUTCOME_SCORED
from pipeline.core.families import FAMILY_BEAM, FAMILY_LOCOMO, FAMILY_LONGMEMEVAL
from pipeline.metrics.aggregates import METRIC_FAMILIES
from pipeline.metrics.locomo_evidence import EVIDENCE_RECALL_OFFICIAL_CONTEXT

# the printer's type order (print_qa_metrics.py type2acc)
LME_TYPES: tuple[str, ...] = (
    "single-session-user",
    "single-session-preference",
    "single-session-assistant",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
LOCOMO_CATEGORY_ORDER: tuple[str, ...] = ("4", "1", "2", "3", "5")  # analyze_aggr_acc's keys
LOCOMO_ADVERSARIAL = "5"
DISTANCE_BIN_TOKENS = 1000

AGG_TYPE = "type"
AGG_CATEGORY = "category"
AGG_TASK_AVERAGED = "task_averaged"
AGG_OVERALL = "overall"
AGG_OVERALL_WITHOUT_5 = "overall_without_5"
AGG_ABSTENTION = "abstention"

OFFICIAL_VIEWS: tuple[str, ...] = (
    "lme_official_accuracy",
    "locomo_official_categories",
    "locomo_official_recall",
    "locomo_official_by_distance",
    "beam_official_abilities",
)


def _metrics_of(family: str) -> list[str]:
    """Built-in judge metrics of a dataset family (pipeline/metrics/aggregates.py; a test ties it to the judges)."""
    return sorted(metric for metric, families in METRIC_FAMILIES.items() if family in families)


def _in_list(values: list[str] | tuple[str, ...]) -> str:
    quoted = ", ".join("'" + v.replace("'", "''") + "'" for v in values)
    return f"({quoted})" if values else "(NULL)"


def _order_values(values: tuple[str, ...]) -> str:
    return ", ".join(f"('{v}', {i})" for i, v in enumerate(values, start=1))


_GROUP = "dataset, system, reader, judge, metric"
_FAILED = f"outcome IN ('{OUTCOME_ANSWER_FAILED}', '{OUTCOME_JUDGMENT_FAILED}')"


def _groups_head(view: str, metrics: list[str], order: tuple[str, ...], counted: str) -> str:
    """``CREATE VIEW`` head shared by the per-group tables: the judgments of ``metrics`` (o), their
    groups (g), the official row order (t) and ``per_row``: every group x ordered value, with
    ``counted`` aggregates of the scored rows and the failed count (a value without rows: zeros)."""
    return f"""
CREATE OR REPLACE VIEW {view} AS
WITH o AS (SELECT * FROM judgment_outcomes WHERE metric IN {_in_list(metrics)}),
g AS (SELECT DISTINCT {_GROUP} FROM o),
t AS (SELECT * FROM (VALUES {_order_values(order)}) v(type_raw, ord)),
per_row AS (
  SELECT g.dataset, g.system, g.reader, g.judge, g.metric, t.type_raw, t.ord,{counted}
    count(*) FILTER (WHERE o.{_FAILED}) AS n_failed
  FROM g CROSS JOIN t
  LEFT JOIN o ON o.dataset = g.dataset AND o.system = g.system AND o.reader = g.reader AND o.judge = g.judge
             AND o.metric = g.metric AND o.type_raw = t.type_raw
  GROUP BY ALL
)"""


def lme_official_accuracy_sql(metrics: list[str]) -> str:
    n_types = len(LME_TYPES)
    counted = f"""
    count(o.correct) FILTER (WHERE o.outcome = '{OUTCOME_SCORED}') AS n_scored,
    count(*) FILTER (WHERE o.outcome = '{OUTCOME_SCORED}' AND o.correct) AS n_correct,"""
    return (
        _groups_head("lme_official_accuracy", metrics, LME_TYPES, counted)
        + f""",
typed AS (SELECT *, n_correct::DOUBLE / nullif(n_scored, 0) AS accuracy FROM per_row),
whole AS (
  SELECT {_GROUP},
    count(*) FILTER (WHERE outcome = '{OUTCOME_SCORED}' AND correct IS NOT NULL) AS n_scored,
    count(*) FILTER (WHERE outcome = '{OUTCOME_SCORED}' AND correct) AS n_correct,
    count(*) FILTER (WHERE {_FAILED}) AS n_failed,
    count(*) FILTER (WHERE outcome = '{OUTCOME_SCORED}' AND correct IS NOT NULL AND contains(question_id, '_abs'))
      AS n_abs_scored,
    count(*) FILTER (WHERE outcome = '{OUTCOME_SCORED}' AND correct AND contains(question_id, '_abs'))
      AS n_abs_correct,
    count(*) FILTER (WHERE {_FAILED} AND contains(question_id, '_abs')) AS n_abs_failed
  FROM o GROUP BY ALL
)
SELECT {_GROUP}, ord AS row_order, '{AGG_TYPE}' AS aggregate, type_raw, n_scored, n_correct, n_failed, accuracy
FROM typed
UNION ALL
SELECT {_GROUP}, {n_types + 1}, '{AGG_TASK_AVERAGED}', NULL, sum(n_scored), sum(n_correct), sum(n_failed),
  CASE WHEN count(accuracy) = {n_types} THEN avg(accuracy) END
FROM typed GROUP BY ALL
UNION ALL
SELECT {_GROUP}, {n_types + 2}, '{AGG_OVERALL}', NULL, n_scored, n_correct, n_failed,
  n_correct::DOUBLE / nullif(n_scored, 0)
FROM whole
UNION ALL
SELECT {_GROUP}, {n_types + 3}, '{AGG_ABSTENTION}', NULL, n_abs_scored, n_abs_correct, n_abs_failed,
  n_abs_correct::DOUBLE / nullif(n_abs_scored, 0)
FROM whole
ORDER BY dataset, metric, judge, reader, system, row_order
"""
    )


def locomo_official_categories_sql(metrics: list[str]) -> str:
    n_cats = len(LOCOMO_CATEGORY_ORDER)
    counted = f"""
    count(o.score) FILTER (WHERE o.outcome = '{OUTCOME_SCORED}') AS n_scored,
    sum(o.score) FILTER (WHERE o.outcome = '{OUTCOME_SCORED}') AS sum_score,"""
    return (
        _groups_head("locomo_official_categories", metrics, LOCOMO_CATEGORY_ORDER, counted)
        + f"""
SELECT {_GROUP}, ord AS row_order, '{AGG_CATEGORY}' AS aggregate, type_raw AS category, n_scored, sum_score,
  n_failed, sum_score / nullif(n_scored, 0) AS mean_score
FROM per_row
UNION ALL
SELECT {_GROUP}, {n_cats + 1}, '{AGG_OVERALL}', NULL, sum(n_scored), sum(sum_score), sum(n_failed),
  sum(sum_score) / nullif(sum(n_scored), 0)
FROM per_row GROUP BY ALL
UNION ALL
SELECT {_GROUP}, {n_cats + 2}, '{AGG_OVERALL_WITHOUT_5}', NULL,
  sum(n_scored) FILTER (WHERE type_raw <> '{LOCOMO_ADVERSARIAL}'),
  sum(sum_score) FILTER (WHERE type_raw <> '{LOCOMO_ADVERSARIAL}'),
  sum(n_failed) FILTER (WHERE type_raw <> '{LOCOMO_ADVERSARIAL}'),
  sum(sum_score) FILTER (WHERE type_raw <> '{LOCOMO_ADVERSARIAL}')
    / nullif(sum(n_scored) FILTER (WHERE type_raw <> '{LOCOMO_ADVERSARIAL}'), 0)
FROM per_row GROUP BY ALL
ORDER BY dataset, metric, judge, reader, system, row_order
"""
    )


LOCOMO_OFFICIAL_RECALL_SQL = f"""
CREATE OR REPLACE VIEW locomo_official_recall AS
WITH r AS (
  SELECT m.dataset, m.system, m.type_raw, m.{EVIDENCE_RECALL_OFFICIAL_CONTEXT} AS recall,
    coalesce(len(q.evidence_raw), 0) > 0 AS has_evidence
  FROM retrieval_metrics m JOIN questions q ON q.partition_key = m.partition_key
  WHERE m.level = 'turn' AND m.{EVIDENCE_RECALL_OFFICIAL_CONTEXT} IS NOT NULL
),
c AS (SELECT * FROM (VALUES {_order_values(LOCOMO_CATEGORY_ORDER)}) v(type_raw, ord)),
per_cat AS (
  SELECT r.dataset, r.system, c.type_raw, c.ord, count(*) AS n_questions,
    count(*) FILTER (WHERE has_evidence) AS n_with_evidence,
    coalesce(sum(recall) FILTER (WHERE has_evidence), 0) AS sum_recall
  FROM r JOIN c ON c.type_raw = r.type_raw GROUP BY ALL
)
SELECT dataset, system, ord AS row_order, '{AGG_CATEGORY}' AS aggregate, type_raw AS category, n_questions,
  n_with_evidence, sum_recall, sum_recall / n_questions AS recall
FROM per_cat
UNION ALL
SELECT dataset, system, {len(LOCOMO_CATEGORY_ORDER) + 1}, '{AGG_OVERALL}', NULL, sum(n_questions),
  sum(n_with_evidence), sum(sum_recall), sum(sum_recall) / sum(n_questions)
FROM per_cat GROUP BY ALL
ORDER BY dataset, system, row_order
"""


def locomo_official_by_distance_sql(metrics: list[str]) -> str:
    return f"""
CREATE OR REPLACE VIEW locomo_official_by_distance AS
WITH tok AS (
  SELECT h.dataset, h.haystack_id, t.source_id AS dia_id,
    sum(len(regexp_extract_all(t.speaker || ': ' || t.text || chr(10), '\\S+')))
      OVER (PARTITION BY h.dataset, h.haystack_id
            ORDER BY TRY_CAST(regexp_extract(h.source_session_id, '(\\d+)$', 1) AS INTEGER), t.position
            ROWS UNBOUNDED PRECEDING) AS cum_tokens
  FROM (SELECT DISTINCT dataset, haystack_id, session_key, source_session_id FROM haystacks) h
  JOIN turns t ON t.dataset = h.dataset AND t.session_key = h.session_key
  WHERE t.source_id IS NOT NULL
),
ev AS (
  SELECT q.dataset, q.partition_key, q.haystack_id, replace(replace(e.ev, '(', ''), ')', '') AS ev
  FROM questions q, unnest(q.evidence_raw) AS e(ev)
),
parsed AS (
  SELECT dataset, partition_key, haystack_id,
    TRY_CAST(substr(split_part(ev, ':', 1), 2) AS INTEGER) AS sess,
    TRY_CAST(string_split(ev, ':')[-1] AS INTEGER) AS dia
  FROM ev WHERE ev <> ''
),
firsts AS (SELECT *, min(sess) OVER (PARTITION BY partition_key) AS first_sess FROM parsed),
-- skipped, as the script's bare except skips them: a question with an unparseable session number,
-- or an unparseable dialogue number inside the oldest session
oldest AS (
  SELECT dataset, partition_key, haystack_id, min(first_sess) AS sess,
    min(dia) FILTER (WHERE sess = first_sess) AS dia
  FROM firsts GROUP BY ALL
  HAVING count(*) = count(sess)
     AND count(*) FILTER (WHERE sess = first_sess) = count(dia) FILTER (WHERE sess = first_sess)
),
dist AS (
  SELECT o.partition_key, ceil(tok.cum_tokens / {DISTANCE_BIN_TOKENS})::INTEGER AS distance_bin
  FROM oldest o JOIN tok ON tok.dataset = o.dataset AND tok.haystack_id = o.haystack_id
   AND tok.dia_id = 'D' || o.sess || ':' || o.dia
),
c AS (SELECT * FROM (VALUES {_order_values(LOCOMO_CATEGORY_ORDER)}) v(type_raw, ord))
SELECT o.dataset, o.system, o.reader, o.judge, o.metric, o.type_raw AS category, c.ord AS category_order,
  d.distance_bin, count(o.score) AS n_scored, sum(o.score) AS sum_score, avg(o.score) AS mean_score
FROM judgment_outcomes o JOIN dist d ON d.partition_key = o.partition_key JOIN c ON c.type_raw = o.type_raw
WHERE o.metric IN {_in_list(metrics)} AND o.outcome = '{OUTCOME_SCORED}'
GROUP BY ALL
ORDER BY o.dataset, o.metric, o.judge, o.reader, o.system, category_order, distance_bin
"""


def create_official_views(con: duckdb.DuckDBPyConnection, tables: set[str], parquet: str) -> list[str]:
    """The official aggregate views (each skipped until the tables it reads exist)."""
    if "judgment_outcomes" not in tables:
        return []
    locomo = _metrics_of(FAMILY_LOCOMO)
    con.execute(lme_official_accuracy_sql(_metrics_of(FAMILY_LONGMEMEVAL)))
    con.execute(locomo_official_categories_sql(locomo))
    created = ["lme_official_accuracy", "locomo_official_categories"]
    if "questions" in tables:
        con.execute(beam_official_abilities_sql(_metrics_of(FAMILY_BEAM)))
        created.append("beam_official_abilities")
    if "retrieval_metrics" in tables and EVIDENCE_RECALL_OFFICIAL_CONTEXT in _columns(con, "retrieval_metrics"):
        con.execute(LOCOMO_OFFICIAL_RECALL_SQL)
        created.append("locomo_official_recall")
    if {"haystacks", "turns"} <= tables and "evidence_raw" in _columns(con, "questions"):
        con.execute(locomo_official_by_distance_sql(locomo))
        created.append("locomo_official_by_distance")
    return created


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    return {r[0] for r in con.execute(f"SELECT column_name FROM (DESCRIBE {table})").fetchall()}
