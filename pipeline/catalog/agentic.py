"""SQL views of agentic answers (registered with pipeline.catalog.views when imported).

- ``agentic_tool_calls``: one row per tool call of every agentic answer: step, tool, query, k,
  units returned, the error the model was told (NULL when the call ran), the step's tokens.
- ``agentic_answers``: one row per agentic answer: tool calls, LLM calls, capped, tokens, status.
- ``agentic_report``: per dataset x system x reader: answers, failures, capped answers, mean tool
  calls and LLM calls, tokens; with ``agentic_retrieval_metrics`` present, the union and first-query
  evidence recall over the reader's whole view (turn level).

Why views over the answers' ``agent_trace`` JSON rather than more stored tables: the trace is the
record; these are ways to read it, and ``SELECT sql FROM duckdb_views()`` shows how.
"""

from __future__ import annotations

import duckdb

from pipeline.catalog.products import CHECKPOINT_FILES, CHECKPOINT_PATH, checkpoints_may_hold

_STEP_TYPE = (
    '{"steps": [{"step": "INTEGER", "prompt_tokens": "BIGINT", "completion_tokens": "BIGINT", '
    '"latency_s": "DOUBLE", "cache_hit": "BOOLEAN", "tool_calls": [{"id": "VARCHAR", "tool": "VARCHAR", '
    '"query": "VARCHAR", "k": "INTEGER", "unit_ids": ["VARCHAR"], "error": "VARCHAR"}]}]}'
)

AGENTIC_TOOL_CALLS_SQL = f"""
CREATE OR REPLACE VIEW agentic_tool_calls AS
WITH steps AS (
    SELECT dataset, partition_key, question_id, system, reader,
           unnest(json_transform(agent_trace, '{_STEP_TYPE}').steps) AS s
    FROM answers WHERE agent_trace IS NOT NULL
), calls AS (
    SELECT dataset, partition_key, question_id, system, reader, s.step AS step,
           s.prompt_tokens AS step_prompt_tokens, s.completion_tokens AS step_completion_tokens,
           s.cache_hit AS step_cache_hit, unnest(s.tool_calls) AS c
    FROM steps
)
SELECT dataset, partition_key, question_id, system, reader, step, c.tool AS tool, c.query AS query, c.k AS k,
       len(c.unit_ids) AS n_units, c.unit_ids AS unit_ids, c.error AS error,
       step_prompt_tokens, step_completion_tokens, step_cache_hit
FROM calls
"""

# A failed answer row carries no payload (reader_kind is NULL): it belongs to an agentic reader when
# its unit "<system>/<reader>" names a reader that has agentic rows (a reader none of whose answers
# succeeded is then not listed: its failures are still in ``answers`` and the accuracy views).
AGENTIC_ANSWERS_SQL = """
CREATE OR REPLACE VIEW agentic_answers AS
WITH named AS (
    SELECT *, regexp_extract(unit, '^(.*)/([^/]*)$', 1) AS unit_system,
           regexp_extract(unit, '^(.*)/([^/]*)$', 2) AS unit_reader
    FROM answers
), agentic AS (SELECT DISTINCT unit_reader FROM named WHERE reader_kind = 'agentic')
SELECT dataset, partition_key, question_id, coalesce(system, unit_system) AS system,
       coalesce(reader, unit_reader) AS reader, status, error, prediction, tool_calls, llm_calls,
       capped, prompt_tokens, completion_tokens, latency_s, cache_hit
FROM named
WHERE reader_kind = 'agentic' OR (reader_kind IS NULL AND unit_reader IN (SELECT unit_reader FROM agentic))
"""

_RECALL_JOIN = """
LEFT JOIN (
    SELECT dataset, system, reader,
           avg(evidence_recall_context) FILTER (WHERE ranking = 'union') AS union_evidence_recall,
           avg(evidence_recall_context) FILTER (WHERE ranking = 'first_query') AS first_query_evidence_recall
    FROM agentic_retrieval_metrics WHERE level = 'turn' AND outcome = 'scored' GROUP BY ALL
) r USING (dataset, system, reader)
"""

AGENTIC_REPORT_SQL = """
CREATE OR REPLACE VIEW agentic_report AS
SELECT a.*{recall_cols} FROM (
    SELECT dataset, system, reader, count(*) AS n_answers,
           count(*) FILTER (WHERE status = 'failed') AS n_failed,
           count(*) FILTER (WHERE capped) AS n_capped,
           avg(tool_calls) FILTER (WHERE status = 'ok') AS mean_tool_calls,
           max(tool_calls) AS max_tool_calls,
           avg(llm_calls) FILTER (WHERE status = 'ok') AS mean_llm_calls,
           avg(prompt_tokens) FILTER (WHERE status = 'ok') AS mean_prompt_tokens,
           avg(completion_tokens) FILTER (WHERE status = 'ok') AS mean_completion_tokens,
           avg(latency_s) FILTER (WHERE status = 'ok') AS mean_latency_s
    FROM agentic_answers GROUP BY ALL
) a {recall_join}
ORDER BY dataset, system, reader
"""

VIEWS = ("agentic_answers", "agentic_tool_calls", "agentic_report")

# memory kind ``agent``: its tool-call log is the ``agent_op`` units of its ingestion checkpoints
# (pipeline.agentic.agent_memory); system and dataset come from the checkpoint's path
KIND_OP = "agent_op"  # MemoryUnit.kind of a logged tool call (role = the tool name); pipeline/agentic imports it
AGENT_MEMORY_LOG_SQL = f"""
CREATE OR REPLACE VIEW agent_memory_log AS
SELECT regexp_extract(filename, '{CHECKPOINT_PATH}', 1) AS system,
       regexp_extract(filename, '{CHECKPOINT_PATH}', 2) AS dataset,
       haystack_id, session_key, session_position,
       CAST(regexp_extract(unit_id, '#op(\\d+)$', 1) AS INTEGER) AS op_index,
       CAST(json_extract(text, '$.step') AS INTEGER) AS step, role AS tool,
       json_extract(text, '$.arguments') AS arguments, json_extract_string(text, '$.memory_id') AS memory_id,
       json_extract_string(text, '$.error') AS error
FROM read_parquet('{{parquet}}/{CHECKPOINT_FILES}', union_by_name = true, filename = true)
WHERE kind = '{KIND_OP}'
"""


def create_agent_memory_log(con: duckdb.DuckDBPyConnection, tables: set[str], parquet: str) -> list[str]:
    """``agent_memory_log`` once some agent memory has logged a tool call (skipped before); over the
    checkpoints under ``parquet`` (the base views' files)."""
    if not checkpoints_may_hold(con, parquet, KIND_OP):
        return []
    try:
        con.execute(AGENT_MEMORY_LOG_SQL.format(parquet=parquet.replace("'", "''")))
        found = con.execute("SELECT count(*) FROM agent_memory_log").fetchone()
    except duckdb.IOException:  # no memory checkpoint yet
        return []
    if not found or not found[0]:
        con.execute("DROP VIEW agent_memory_log")
        return []
    return ["agent_memory_log"]


def create_agentic_views(con: duckdb.DuckDBPyConnection, tables: set[str], parquet: str) -> list[str]:
    """The agentic views, once ``answers`` has the agentic columns (skipped before)."""
    if "answers" not in tables:
        return []
    cols = {r[0] for r in con.execute("SELECT column_name FROM (DESCRIBE answers)").fetchall()}
    if "agent_trace" not in cols:
        return []
    con.execute(AGENTIC_ANSWERS_SQL)
    con.execute(AGENTIC_TOOL_CALLS_SQL)
    has_metrics = "agentic_retrieval_metrics" in tables
    con.execute(
        AGENTIC_REPORT_SQL.format(
            recall_cols=", r.union_evidence_recall, r.first_query_evidence_recall" if has_metrics else "",
            recall_join=_RECALL_JOIN if has_metrics else "",
        )
    )
    return list(VIEWS)


# ---- the report's per-question drill-down (pipeline.report.questions / html) ------------------------
_DRILLDOWN_CALLS_SQL = """
SELECT partition_key, system, reader, step, tool, query, k, n_units, error
FROM agentic_tool_calls WHERE dataset = $ds ORDER BY partition_key, system, reader, step
"""
_DRILLDOWN_ANSWERS_SQL = """
SELECT partition_key, system, reader, tool_calls, llm_calls, capped
FROM agentic_answers WHERE dataset = $ds AND status = 'ok'
"""
MAX_DRILLDOWN_QUERY_CHARS = 120


def drilldown_steps(con: duckdb.DuckDBPyConnection, dataset: str) -> dict[tuple[str, str, str], list[str]]:
    """(partition key, system, reader) -> lines describing an agentic answer's steps: a summary
    (tool calls, LLM calls, capped) then one line per tool call. Empty without agentic answers."""
    names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    if not {"agentic_answers", "agentic_tool_calls"} <= names:
        return {}
    out: dict[tuple[str, str, str], list[str]] = {}
    for pk, system, reader, calls, llm_calls, capped in con.execute(_DRILLDOWN_ANSWERS_SQL, {"ds": dataset}).fetchall():
        cap = ", capped at max_steps" if capped else ""
        out[(pk, system, reader)] = [f"{calls} tool calls, {llm_calls} LLM calls{cap}"]
    rows = con.execute(_DRILLDOWN_CALLS_SQL, {"ds": dataset}).fetchall()
    for pk, system, reader, step, tool, query, k, n_units, error in rows:
        args = f"{(query or '')[:MAX_DRILLDOWN_QUERY_CHARS]!r}, k={k}" if query is not None else ""
        outcome = f"error: {error}" if error else f"{n_units} units"
        out.setdefault((pk, system, reader), []).append(f"step {step}: {tool}({args}) -> {outcome}")
    return out
