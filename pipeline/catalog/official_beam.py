"""BEAM's official per-ability table as a catalog view (``beam_official_abilities``).

Why a view of its own: BEAM's ``src/evaluation/report_results.py`` does not average over
questions. Per chat (a results folder), it takes each ability's mean over that chat's questions
(``tau_norm`` for event ordering, ``llm_judge_score`` for the others: membench's ``beam_official``
metric gives exactly that value per question), then averages those chat means over the chats.
One row per ability in the report's column order, then ``ability_average`` = the unweighted mean
of the ten ability scores (NULL unless all ten have one), the single number BEAM tables are
summed up by. A dataset is one tier (100K, 500K, 1M or 10M: ``tier`` is read from the chat ids).
The same aggregation is shown for every BEAM metric (``beam_rubric_mean``, ``beam_event_ordering``),
named by its metric.

Deviation, on purpose: a chat mean is over SCORED questions; failed answers or judgments are
counted apart (``n_failed``), never as a zero, and a chat without a scored question of an ability
is left out of that ability's mean (the official script would divide by zero).
"""

from __future__ import annotations

from pipeline.catalog.report import OUTCOME_ANSWER_FAILED, OUTCOME_JUDGMENT_FAILED, OUTCOME_SCORED
from pipeline.core.families import BEAM_ABILITIES

VIEW = "beam_official_abilities"
AGG_ABILITY = "ability"
AGG_ABILITY_AVERAGE = "ability_average"
_GROUP = "dataset, system, reader, judge, metric"


def _in_list(values: list[str] | tuple[str, ...]) -> str:
    quoted = ", ".join("'" + v.replace("'", "''") + "'" for v in values)
    return f"({quoted})" if values else "(NULL)"


def beam_official_abilities_sql(metrics: list[str]) -> str:
    order = ", ".join(f"('{a}', {i})" for i, a in enumerate(BEAM_ABILITIES, start=1))
    failed = f"o.outcome IN ('{OUTCOME_ANSWER_FAILED}', '{OUTCOME_JUDGMENT_FAILED}')"
    return f"""
CREATE OR REPLACE VIEW {VIEW} AS
WITH o AS (
  SELECT j.*, q.haystack_id AS chat FROM judgment_outcomes j JOIN questions q ON q.partition_key = j.partition_key
  WHERE j.metric IN {_in_list(metrics)}
),
g AS (SELECT DISTINCT {_GROUP}, split_part(min(chat) OVER (PARTITION BY dataset), '-', 1) AS tier FROM o),
t AS (SELECT * FROM (VALUES {order}) v(ability, ord)),
per_chat AS (
  SELECT {_GROUP}, o.type_raw AS ability, o.chat,
    avg(o.score) FILTER (WHERE o.outcome = '{OUTCOME_SCORED}') AS chat_mean,
    count(o.score) FILTER (WHERE o.outcome = '{OUTCOME_SCORED}') AS n_scored,
    count(*) FILTER (WHERE {failed}) AS n_failed
  FROM o GROUP BY ALL
),
per_ability AS (
  SELECT g.dataset, g.system, g.reader, g.judge, g.metric, g.tier, t.ability, t.ord,
    count(p.chat_mean) AS n_chats, coalesce(sum(p.n_scored), 0) AS n_scored,
    coalesce(sum(p.n_failed), 0) AS n_failed, avg(p.chat_mean) AS score
  FROM g CROSS JOIN t
  LEFT JOIN per_chat p ON p.dataset = g.dataset AND p.system = g.system AND p.reader = g.reader
    AND p.judge = g.judge AND p.metric = g.metric AND p.ability = t.ability
  GROUP BY ALL
)
SELECT {_GROUP}, tier, ord AS row_order, '{AGG_ABILITY}' AS aggregate, ability, n_chats, n_scored, n_failed, score
FROM per_ability
UNION ALL
SELECT {_GROUP}, tier, {len(BEAM_ABILITIES) + 1}, '{AGG_ABILITY_AVERAGE}', NULL, max(n_chats), sum(n_scored),
  sum(n_failed), CASE WHEN count(score) = {len(BEAM_ABILITIES)} THEN avg(score) END
FROM per_ability GROUP BY ALL
ORDER BY dataset, metric, judge, reader, system, row_order
"""
