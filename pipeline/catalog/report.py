"""Report views of the DuckDB catalog (listed in pipeline.catalog.views.CATALOG_VIEWS).

Why live views over the stored tables rather than report snapshots: every stage rebuilds the
catalog when it finishes, so ``SELECT * FROM accuracy_report`` answers "how are we doing" during a
run, and the SQL that defines each number can be read with
``SELECT sql FROM duckdb_views() WHERE view_name = 'accuracy_report'``. The HTML report and
results.json are rendered from these same views, so all three always agree.

Views:
- ``retrieval_report``: per dataset x system x level x question type (+ ``(all)`` rows):
  counts, exclusions, failures, mean of every retrieval metric, retrieval latency p50/p95.
- ``judgment_outcomes``: one row per judgment with its outcome (scored / excluded /
  answer_failed / judgment_failed), question type and the answer's invalid flag.
- ``accuracy_report``: per dataset x system x reader x judge metric: the headline value with its
  95 % interval (``ci_low``/``ci_high``: Wilson for binary accuracies, a seeded percentile
  bootstrap for mean scores such as F1), the failures-as-wrong lower bound and how many questions
  it counts as wrong, failure / invalid / excluded / missing counts, answer latency, tokens, cost,
  tokens / dollars / seconds per correct answer, and headline retrieval metrics.
- ``accuracy_by_type``: the same accuracy columns per question type (raw label + named).
- ``mc_confusion``: multiple-choice answers, gold index x predicted index (``invalid`` and
  ``failed`` as predicted values).
- ``paired_comparisons``: every pair of systems with the same dataset, reader and judge metric
  on the questions both scored: discordant counts and McNemar's exact p-value; for mean-score
  metrics also the mean difference with a seeded paired-bootstrap interval.
- ``judge_agreement``: every pair of judges that scored the same answers (dataset, question,
  system, reader): the 2x2 counts, raw agreement and Cohen's kappa (pipeline.metrics.agreement),
  per system and over all systems (system ``(all)``).
- ``judge_failures``: per dataset x system x reader x judge: failed judgments, and how many of
  them were unparseable verdicts (a reply with no label; discarded from the LLM cache, re-asked).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import duckdb

from pipeline.core.records import LOAD_FAILURE_KEY_SQL  # records without a readable id count too
from pipeline.core.status import UNPARSEABLE_ERROR_PREFIX
from pipeline.metrics.aggregates import AGG_ACCURACY, AGG_MEAN_SCORE, METRIC_AGGREGATES
from pipeline.metrics.bounds import (
    FAILURES_AS_WRONG,
    N_FAILURES_AS_WRONG,
    SECONDS_PER_CORRECT,
    TOKENS_PER_CORRECT,
    USD_PER_CORRECT,
    failures_as_wrong_sql,
    per_correct_sql,
)
from pipeline.metrics.locomo_evidence import EVIDENCE_RECALL_OFFICIAL_CONTEXT
from pipeline.metrics.retrieval import EVIDENCE_RECALL_CONTEXT, METRIC_COLUMN_RE, METRIC_COLUMNS
from pipeline.metrics.stats import BOOTSTRAP_95, WILSON_95, install_macros

ALL_TYPES = "(all)"
UNKNOWN_TYPE = "(unknown)"

# outcomes of one judgment row (judgment_outcomes.outcome)
OUTCOME_SCORED = "scored"
OUTCOME_EXCLUDED = "excluded"
OUTCOME_ANSWER_FAILED = "answer_failed"
OUTCOME_JUDGMENT_FAILED = "judgment_failed"


# (level, metric column) of retrieval_metrics joined into accuracy_report as retr_<level>_<column>
HEADLINE_RETRIEVAL: tuple[tuple[str, str], ...] = (
    ("session", "recall_any_at_5"),
    ("session", "recall_any_at_10"),
    ("session", "recall_all_at_10"),
    ("session", "ndcg_any_at_10"),
    ("turn", "recall_all_at_10"),
    ("turn", "evidence_recall_context"),
)


def headline_column(level: str, column: str) -> str:
    return f"retr_{level}_{column}"


# per-question metrics of the reader's context (no k); the official LoCoMo one is set on excluded rows too
CONTEXT_METRIC_COLUMNS: tuple[str, ...] = (EVIDENCE_RECALL_CONTEXT, EVIDENCE_RECALL_OFFICIAL_CONTEXT)


def present_metric_columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Metric columns of the ``retrieval_metrics`` table in order (k set by the config's retrieval_k)."""
    cols = [r[0] for r in con.execute("SELECT column_name FROM (DESCRIBE retrieval_metrics)").fetchall()]
    ranked = [c for c in cols if re.match(METRIC_COLUMN_RE, c)]
    return ranked + [c for c in cols if c in CONTEXT_METRIC_COLUMNS]


def _retrieval_report_sql(columns: Sequence[str] = METRIC_COLUMNS) -> str:
    metrics = ",\n  ".join(f"avg({c}) AS {c}" for c in columns)
    return f"""
CREATE OR REPLACE VIEW retrieval_report AS
SELECT dataset, system, level,
  CASE WHEN grouping(type_raw) = 1 THEN '{ALL_TYPES}' ELSE type_raw END AS type_raw,
  CASE WHEN grouping(type_name) = 1 THEN '{ALL_TYPES}' ELSE type_name END AS type_name,
  count(*) AS n_questions,
  count(*) FILTER (WHERE outcome = 'scored') AS n_scored,
  count(*) FILTER (WHERE outcome LIKE 'excluded%') AS n_excluded,
  count(*) FILTER (WHERE outcome = 'excluded_abstention') AS n_excluded_abstention,
  count(*) FILTER (WHERE outcome = 'excluded_no_gold') AS n_excluded_no_gold,
  count(*) FILTER (WHERE outcome = 'retrieval_failed') AS n_failed,
  {metrics},
  quantile_cont(retrieval_latency_s, 0.5) AS retrieval_latency_p50_s,
  quantile_cont(retrieval_latency_s, 0.95) AS retrieval_latency_p95_s,
  avg(context_tokens) AS mean_context_tokens
FROM retrieval_metrics
GROUP BY GROUPING SETS ((dataset, system, level, type_raw, type_name), (dataset, system, level))
ORDER BY dataset, system, level, grouping(type_raw) DESC, type_raw
"""


JUDGMENT_OUTCOMES_SQL = f"""
CREATE OR REPLACE VIEW judgment_outcomes AS
WITH j AS (
  SELECT *, split_part(unit, '/', 1) AS u_system, split_part(unit, '/', 2) AS u_reader,
         split_part(unit, '/', 3) AS u_judge
  FROM judgments
),
a AS (SELECT partition_key, unit, status AS answer_status, label, invalid, context_tokens FROM answers)
SELECT j.dataset, j.partition_key, j.question_id,
  coalesce(q.type_raw, '{UNKNOWN_TYPE}') AS type_raw, coalesce(q.type_name, '{UNKNOWN_TYPE}') AS type_name,
  j.u_system AS system, j.u_reader AS reader, j.u_judge AS judge,
  coalesce(j.metric, max(j.metric) OVER (PARTITION BY j.dataset, j.u_judge), j.u_judge) AS metric,
  coalesce(a.label, max(a.label) OVER (PARTITION BY j.u_reader)) AS reader_label,
  CASE WHEN a.answer_status = 'failed' OR (j.status = 'failed' AND j.error LIKE 'answer failed%')
         THEN '{OUTCOME_ANSWER_FAILED}'
       WHEN j.status = 'failed' THEN '{OUTCOME_JUDGMENT_FAILED}'
       WHEN j.correct IS NULL THEN '{OUTCOME_EXCLUDED}'
       ELSE '{OUTCOME_SCORED}' END AS outcome,
  j.correct, j.score, coalesce(a.invalid, false) AS invalid, a.context_tokens, j.error,
  j.judge_prompt_tokens, j.judge_completion_tokens
FROM j
LEFT JOIN a ON a.partition_key = j.partition_key AND a.unit = j.u_system || '/' || j.u_reader
LEFT JOIN questions q ON q.partition_key = j.partition_key
"""

_COUNTS = f"""
  count(*) AS n_judgments,
  count(*) FILTER (WHERE outcome = '{OUTCOME_SCORED}') AS n_scored,
  count(*) FILTER (WHERE outcome = '{OUTCOME_SCORED}' AND correct) AS n_correct,
  count(*) FILTER (WHERE outcome = '{OUTCOME_ANSWER_FAILED}') AS n_failed_answer,
  count(*) FILTER (WHERE outcome = '{OUTCOME_JUDGMENT_FAILED}') AS n_failed_judgment,
  count(*) FILTER (WHERE outcome = '{OUTCOME_SCORED}' AND invalid) AS n_invalid,
  count(*) FILTER (WHERE outcome = '{OUTCOME_EXCLUDED}') AS n_excluded,
  avg(score) FILTER (WHERE outcome = '{OUTCOME_SCORED}') AS mean_score,
  coalesce(sum(score) FILTER (WHERE outcome = '{OUTCOME_SCORED}'), 0) AS sum_score,
  list(score ORDER BY partition_key) FILTER (WHERE outcome = '{OUTCOME_SCORED}' AND score IS NOT NULL) AS scores,
  avg(context_tokens) FILTER (WHERE outcome IN ('{OUTCOME_SCORED}', '{OUTCOME_EXCLUDED}')) AS mean_context_tokens"""

# agg + its aggregate rule + the bootstrap of mean-score metrics, computed once per row
# (MATERIALIZED: ci_low and ci_high read the same bootstrap; an inlined CTE would run it twice)
_RATED = f"""
rated AS MATERIALIZED (
  SELECT agg.*, coalesce(ag.aggregate, '{AGG_ACCURACY}') AS aggregate,
    CASE WHEN coalesce(ag.aggregate, '{AGG_ACCURACY}') = '{AGG_MEAN_SCORE}' THEN bootstrap_mean_ci(scores) END AS boot
  FROM agg LEFT JOIN ag ON ag.metric = agg.metric
)"""

# Wilson only for binary accuracies (a mean score is not a proportion); ci_* = the interval of
# headline_value, whichever its kind
_RATES = f"""
  n_correct::DOUBLE / nullif(n_scored, 0) AS accuracy,
  CASE WHEN aggregate = '{AGG_ACCURACY}' THEN wilson_low(n_correct, n_scored) END AS wilson_low,
  CASE WHEN aggregate = '{AGG_ACCURACY}' THEN wilson_high(n_correct, n_scored) END AS wilson_high,
  aggregate,
  CASE WHEN aggregate = '{AGG_MEAN_SCORE}' THEN mean_score
       ELSE n_correct::DOUBLE / nullif(n_scored, 0) END AS headline_value,
  CASE WHEN aggregate = '{AGG_MEAN_SCORE}' THEN boot[1] ELSE wilson_low(n_correct, n_scored) END AS ci_low,
  CASE WHEN aggregate = '{AGG_MEAN_SCORE}' THEN boot[2] ELSE wilson_high(n_correct, n_scored) END AS ci_high,
  CASE WHEN n_scored = 0 THEN NULL WHEN aggregate = '{AGG_MEAN_SCORE}' THEN '{BOOTSTRAP_95}'
       ELSE '{WILSON_95}' END AS ci_method"""

ANSWER_STATS_SQL = """
SELECT dataset, split_part(unit, '/', 1) AS system, split_part(unit, '/', 2) AS reader,
  count(*) FILTER (WHERE status = 'ok') AS n_answers_ok,
  quantile_cont(latency_s, 0.5) FILTER (WHERE status = 'ok' AND NOT coalesce(cache_hit, false)) AS latency_p50_s,
  quantile_cont(latency_s, 0.95) FILTER (WHERE status = 'ok' AND NOT coalesce(cache_hit, false)) AS latency_p95_s,
  avg(cache_hit::INT) FILTER (WHERE status = 'ok') AS cache_hit_rate,
  avg(prompt_tokens) FILTER (WHERE status = 'ok') AS mean_prompt_tokens,
  avg(completion_tokens) FILTER (WHERE status = 'ok') AS mean_completion_tokens,
  avg(cost_usd) FILTER (WHERE status = 'ok') AS cost_per_question_usd,
  sum(cost_usd) FILTER (WHERE status = 'ok') AS total_cost_usd,
  count(*) FILTER (WHERE status = 'ok' AND cost_usd IS NULL) AS n_cost_unknown,
  CASE WHEN count(*) FILTER (WHERE status = 'ok' AND (prompt_tokens IS NULL OR completion_tokens IS NULL)) = 0
       THEN sum(prompt_tokens + completion_tokens) FILTER (WHERE status = 'ok') END AS total_answer_tokens,
  -- a cache hit is counted at the mean latency of the uncached answers (its own latency is a file read)
  avg(latency_s) FILTER (WHERE status = 'ok' AND NOT coalesce(cache_hit, false))
    * count(*) FILTER (WHERE status = 'ok') AS answer_seconds
FROM answers GROUP BY ALL
"""

# seconds spent retrieving per (dataset, system): every successful retrieval's own latency
RETRIEVAL_SECONDS_SQL = """
SELECT dataset, unit AS system, sum(retrieval_latency_s) AS retrieval_seconds
FROM retrievals WHERE status = 'ok' GROUP BY ALL
"""
NO_RETRIEVAL_SECONDS_SQL = (
    "SELECT NULL::VARCHAR AS dataset, NULL::VARCHAR AS system, NULL::DOUBLE AS retrieval_seconds WHERE false"
)


def _bound_columns(n_questions: str) -> str:
    """failures_as_wrong and its count (pipeline.metrics.bounds) against ``n_questions`` of the group."""
    unscored = f"n_failed_answer + n_failed_judgment + greatest(coalesce({n_questions}, 0) - n_judgments, 0)"
    credit = f"CASE WHEN aggregate = '{AGG_MEAN_SCORE}' THEN sum_score ELSE n_correct END"
    return (
        f"  {failures_as_wrong_sql(credit, 'n_scored', unscored)} AS {FAILURES_AS_WRONG},\n"
        f"  {unscored} AS {N_FAILURES_AS_WRONG},"
    )


def _cost_columns() -> str:
    """Tokens, dollars and seconds per correct answer (pipeline.metrics.bounds.per_correct)."""
    usd = "CASE WHEN ans.n_cost_unknown = 0 THEN ans.total_cost_usd END"
    seconds = "coalesce(ans.answer_seconds, 0) + coalesce(rs.retrieval_seconds, 0)"
    return (
        f"  {per_correct_sql('ans.total_answer_tokens', 'n_correct')} AS {TOKENS_PER_CORRECT},\n"
        f"  {per_correct_sql(usd, 'n_correct')} AS {USD_PER_CORRECT},\n"
        f"  {per_correct_sql(seconds, 'n_correct')} AS {SECONDS_PER_CORRECT},"
    )


def _aggregates_cte() -> str:
    """metric -> aggregate rule (pipeline.metrics.aggregates; accuracy when a metric is unknown)."""
    rows = [f"('{name.replace(chr(39), '')}', '{agg}')" for name, agg in sorted(METRIC_AGGREGATES.items())]
    if not rows:
        return "SELECT NULL::VARCHAR AS metric, NULL::VARCHAR AS aggregate WHERE false"
    return "SELECT * FROM (VALUES " + ", ".join(rows) + ") t(metric, aggregate)"


def _retrieval_headline_cte(has_metrics: bool, present: Sequence[str] = METRIC_COLUMNS) -> str:
    """Headline retrieval columns per (dataset, system); NULL where the configured k lacks one."""
    cols = [headline_column(level, col) for level, col in HEADLINE_RETRIEVAL]
    if not has_metrics:
        nulls = ", ".join(f"NULL::DOUBLE AS {c}" for c in cols)
        return f"SELECT NULL::VARCHAR AS dataset, NULL::VARCHAR AS system, {nulls} WHERE false"
    avgs = ", ".join(
        f"avg({col}) FILTER (WHERE level = '{level}') AS {headline_column(level, col)}"
        if col in present
        else f"NULL::DOUBLE AS {headline_column(level, col)}"
        for level, col in HEADLINE_RETRIEVAL
    )
    return f"SELECT dataset, system, {avgs} FROM retrieval_metrics WHERE outcome = 'scored' GROUP BY ALL"


def _dataset_questions_cte(has_failures: bool) -> str:
    """Questions per dataset, counting records that failed to load (their stages hold failed rows)."""
    failures = f" UNION ALL SELECT dataset, {LOAD_FAILURE_KEY_SQL} FROM load_failures" if has_failures else ""
    return (
        "SELECT dataset, count(DISTINCT partition_key) AS n_dataset_questions FROM "
        f"(SELECT dataset, partition_key FROM questions{failures}) GROUP BY dataset"
    )


def _accuracy_report_sql(
    has_retrieval: bool, has_failures: bool, present: Sequence[str] = METRIC_COLUMNS, has_retrievals: bool = False
) -> str:
    retr_cols = ", ".join(f"r.{headline_column(lv, c)}" for lv, c in HEADLINE_RETRIEVAL)
    return f"""
CREATE OR REPLACE VIEW accuracy_report AS
WITH agg AS (
  SELECT dataset, system, reader, any_value(reader_label) AS reader_label, judge, metric,{_COUNTS}
  FROM judgment_outcomes GROUP BY dataset, system, reader, judge, metric
),
ag AS ({_aggregates_cte()}),{_RATED},
ans AS ({ANSWER_STATS_SQL}),
nq AS ({_dataset_questions_cte(has_failures)}),
r AS ({_retrieval_headline_cte(has_retrieval, present)}),
rs AS ({RETRIEVAL_SECONDS_SQL if has_retrievals else NO_RETRIEVAL_SECONDS_SQL})
SELECT agg.dataset, agg.system, agg.reader, agg.reader_label, agg.judge, agg.metric,{_RATES},
{_bound_columns("nq.n_dataset_questions")}
  mean_score, n_scored, n_correct, n_failed_answer, n_failed_judgment, n_invalid, n_excluded,
  n_judgments, nq.n_dataset_questions, nq.n_dataset_questions - n_judgments AS n_missing,
{_cost_columns()}
  ans.latency_p50_s, ans.latency_p95_s, ans.cache_hit_rate, ans.mean_prompt_tokens,
  ans.mean_completion_tokens, mean_context_tokens, ans.cost_per_question_usd, ans.total_cost_usd,
  ans.n_cost_unknown, {retr_cols}
FROM rated agg
LEFT JOIN ans ON ans.dataset = agg.dataset AND ans.system = agg.system AND ans.reader = agg.reader
LEFT JOIN nq ON nq.dataset = agg.dataset
LEFT JOIN r ON r.dataset = agg.dataset AND r.system = agg.system
LEFT JOIN rs ON rs.dataset = agg.dataset AND rs.system = agg.system
ORDER BY agg.dataset, agg.metric, agg.judge, agg.reader, agg.system
"""


def _accuracy_by_type_sql() -> str:
    return f"""
CREATE OR REPLACE VIEW accuracy_by_type AS
WITH agg AS (
  SELECT dataset, system, reader, any_value(reader_label) AS reader_label, judge, metric,
    type_raw, type_name,{_COUNTS}
  FROM judgment_outcomes GROUP BY dataset, system, reader, judge, metric, type_raw, type_name
),
ag AS ({_aggregates_cte()}),{_RATED},
nq AS (SELECT dataset, type_raw, count(*) AS n_type_questions FROM questions GROUP BY ALL)
SELECT agg.dataset, agg.system, agg.reader, agg.reader_label, agg.judge, agg.metric,
  agg.type_raw, agg.type_name,{_RATES},
{_bound_columns("nq.n_type_questions")}
  mean_score, n_scored, n_correct, n_failed_answer, n_failed_judgment, n_invalid, n_excluded,
  n_judgments, nq.n_type_questions, mean_context_tokens
FROM rated agg
LEFT JOIN nq ON nq.dataset = agg.dataset AND nq.type_raw = agg.type_raw
ORDER BY agg.dataset, agg.metric, agg.judge, agg.reader, agg.system, agg.type_raw
"""


MC_CONFUSION_SQL = """
CREATE OR REPLACE VIEW mc_confusion AS
SELECT a.dataset, split_part(a.unit, '/', 1) AS system, split_part(a.unit, '/', 2) AS reader,
  q.correct_choice_index AS gold_index,
  CASE WHEN a.status = 'failed' THEN 'failed'
       WHEN a.invalid OR a.predicted_index IS NULL THEN 'invalid'
       ELSE CAST(a.predicted_index AS VARCHAR) END AS predicted,
  count(*) AS n
FROM answers a JOIN questions q ON q.partition_key = a.partition_key
WHERE q.correct_choice_index IS NOT NULL
GROUP BY ALL
ORDER BY 1, 2, 3, 4, 5
"""

PAIRED_COMPARISONS_SQL = f"""
CREATE OR REPLACE VIEW paired_comparisons AS
WITH s AS (
  SELECT dataset, partition_key, system, reader, judge, metric, correct, score
  FROM judgment_outcomes WHERE outcome = '{OUTCOME_SCORED}'
),
ag AS ({_aggregates_cte()}),
pairs AS MATERIALIZED (
  SELECT a.dataset, a.reader, a.judge, a.metric, a.system AS system_a, b.system AS system_b,
    count(*) AS n_paired,
    avg(a.score) AS mean_score_a, avg(b.score) AS mean_score_b,
    list(a.score - b.score ORDER BY a.partition_key) FILTER (WHERE a.score IS NOT NULL AND b.score IS NOT NULL)
      AS score_diffs,
    count(*) FILTER (WHERE a.correct AND b.correct) AS n_both_correct,
    count(*) FILTER (WHERE a.correct AND NOT b.correct) AS n_only_a_correct,
    count(*) FILTER (WHERE NOT a.correct AND b.correct) AS n_only_b_correct,
    count(*) FILTER (WHERE NOT a.correct AND NOT b.correct) AS n_both_wrong
  FROM s a JOIN s b
    ON a.dataset = b.dataset AND a.partition_key = b.partition_key AND a.reader = b.reader
   AND a.judge = b.judge AND a.metric = b.metric AND a.system < b.system
  GROUP BY ALL
),
booted AS MATERIALIZED (
  SELECT pairs.*, coalesce(ag.aggregate, '{AGG_ACCURACY}') AS aggregate,
    CASE WHEN ag.aggregate = '{AGG_MEAN_SCORE}' THEN bootstrap_mean_ci(score_diffs) END AS boot
  FROM pairs LEFT JOIN ag ON ag.metric = pairs.metric
)
SELECT dataset, reader, judge, metric, aggregate, system_a, system_b, n_paired, n_both_correct, n_only_a_correct,
  n_only_b_correct, n_both_wrong,
  (n_both_correct + n_only_a_correct)::DOUBLE / n_paired AS accuracy_a,
  (n_both_correct + n_only_b_correct)::DOUBLE / n_paired AS accuracy_b,
  (n_only_a_correct - n_only_b_correct)::DOUBLE / n_paired AS accuracy_diff,
  mcnemar_exact_p(n_only_a_correct, n_only_b_correct) AS mcnemar_p,
  mean_score_a, mean_score_b, mean_score_a - mean_score_b AS score_diff,
  boot[1] AS score_diff_ci_low, boot[2] AS score_diff_ci_high
FROM booted
ORDER BY dataset, metric, judge, reader, system_a, system_b
"""

ALL_SYSTEMS = "(all)"

JUDGE_AGREEMENT_SQL = f"""
CREATE OR REPLACE VIEW judge_agreement AS
WITH s AS (
  SELECT dataset, partition_key, system, reader, judge, metric, correct
  FROM judgment_outcomes WHERE outcome = '{OUTCOME_SCORED}'
),
pairs AS (
  SELECT a.dataset, a.reader, a.judge AS judge_a, b.judge AS judge_b, a.metric AS metric_a, b.metric AS metric_b,
    CASE WHEN grouping(a.system) = 1 THEN '{ALL_SYSTEMS}' ELSE a.system END AS system,
    count(*) AS n_paired,
    count(*) FILTER (WHERE a.correct AND b.correct) AS n_both_correct,
    count(*) FILTER (WHERE a.correct AND NOT b.correct) AS n_only_a_correct,
    count(*) FILTER (WHERE NOT a.correct AND b.correct) AS n_only_b_correct,
    count(*) FILTER (WHERE NOT a.correct AND NOT b.correct) AS n_both_wrong
  FROM s a JOIN s b
    ON a.dataset = b.dataset AND a.partition_key = b.partition_key AND a.system = b.system
   AND a.reader = b.reader AND a.judge < b.judge
  GROUP BY GROUPING SETS ((a.dataset, a.reader, a.judge, b.judge, a.metric, b.metric, a.system),
                          (a.dataset, a.reader, a.judge, b.judge, a.metric, b.metric))
),
p AS (
  SELECT *,
    (n_both_correct + n_both_wrong)::DOUBLE / n_paired AS agreement,
    (n_both_correct + n_only_a_correct)::DOUBLE / n_paired AS p_a,
    (n_both_correct + n_only_b_correct)::DOUBLE / n_paired AS p_b
  FROM pairs
)
SELECT dataset, reader, system, judge_a, judge_b, metric_a, metric_b, n_paired, n_both_correct,
  n_only_a_correct, n_only_b_correct, n_both_wrong, agreement, p_a AS accuracy_a, p_b AS accuracy_b,
  CASE WHEN p_a * p_b + (1 - p_a) * (1 - p_b) = 1 THEN NULL
       ELSE (agreement - (p_a * p_b + (1 - p_a) * (1 - p_b))) / (1 - (p_a * p_b + (1 - p_a) * (1 - p_b)))
  END AS cohen_kappa
FROM p
ORDER BY dataset, reader, judge_a, judge_b, system = '{ALL_SYSTEMS}' DESC, system
"""

JUDGE_FAILURES_SQL = f"""
CREATE OR REPLACE VIEW judge_failures AS
SELECT dataset, system, reader, judge, metric,
  count(*) AS n_judgments,
  count(*) FILTER (WHERE outcome = '{OUTCOME_JUDGMENT_FAILED}') AS n_failed_judgment,
  count(*) FILTER (WHERE outcome = '{OUTCOME_JUDGMENT_FAILED}'
                   AND starts_with(error, '{UNPARSEABLE_ERROR_PREFIX}')) AS n_unparseable_verdict
FROM judgment_outcomes
GROUP BY ALL
ORDER BY dataset, metric, judge, reader, system
"""

REPORT_VIEWS: tuple[str, ...] = (
    "retrieval_report",
    "judgment_outcomes",
    "accuracy_report",
    "accuracy_by_type",
    "mc_confusion",
    "paired_comparisons",
    "judge_agreement",
    "judge_failures",
)


def create_retrieval_views(con: duckdb.DuckDBPyConnection, tables: set[str], parquet: str) -> list[str]:
    """``retrieval_report`` over the ``retrieval_metrics`` table (skipped until it exists)."""
    if "retrieval_metrics" not in tables:
        return []
    con.execute(_retrieval_report_sql(present_metric_columns(con)))
    return ["retrieval_report"]


def create_accuracy_views(con: duckdb.DuckDBPyConnection, tables: set[str], parquet: str) -> list[str]:
    """Statistics macros (always) + the accuracy views (each skipped until its tables exist)."""
    install_macros(con)
    if not {"questions", "answers"} <= tables:
        return []
    con.execute(MC_CONFUSION_SQL)
    if "judgments" not in tables:
        return ["mc_confusion"]
    con.execute(JUDGMENT_OUTCOMES_SQL)
    has_retrieval = "retrieval_metrics" in tables
    present = present_metric_columns(con) if has_retrieval else []
    con.execute(_accuracy_report_sql(has_retrieval, "load_failures" in tables, present, "retrievals" in tables))
    con.execute(_accuracy_by_type_sql())
    con.execute(PAIRED_COMPARISONS_SQL)
    con.execute(JUDGE_AGREEMENT_SQL)
    con.execute(JUDGE_FAILURES_SQL)
    return [
        "mc_confusion",
        "judgment_outcomes",
        "accuracy_report",
        "accuracy_by_type",
        "paired_comparisons",
        "judge_agreement",
        "judge_failures",
    ]
