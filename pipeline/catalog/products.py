"""SQL views of what the memory products under test spent (pipeline/products), per session and per system.

- ``product_sessions``: one row per session a product memory ingested, from the ``product_session``
  marker of the ingestion checkpoints (pipeline/products/base.py): the session's LLM calls (all,
  upstream, failed), prompt and completion tokens, cost, embedding calls and tokens, seconds and
  memories written. A session that failed and was ingested again counts once (its last, completed
  attempt): the checkpoint keeps completed sessions only.
- ``product_usage``: per dataset x product system: the ingestion totals of ``product_sessions``,
  seconds per session (mean and p50), and the search phase from the ``retrievals`` rows: searches,
  failed searches, the search-time LLM calls, tokens and cost (``notes.search_usage``, metered by
  the proxy while the product searched) and the search latency p50 / p95 (``retrieval_latency_s``).

Why views over the checkpoints and ``retrievals`` rather than stored tables: the markers and the
notes are the record; these are ways to read them. Created only once a product memory has
ingested a session (like ``agent_memory_log``).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipeline.util.footer_memo import FooterMemo, read_footer

# a memory's ingestion checkpoints under the Parquet folder (pipeline/memory: memory/<system>/<dataset>/<file>),
# and the path's system and dataset; the product and agent-memory views read them both
CHECKPOINT_FILES = "memory/*/*/*.parquet"
CHECKPOINT_PATH = r"memory/([^/]+)/([^/]+)/[^/]+\.parquet$"
MAX_CHECKPOINTS_REMEMBERED = 100_000  # checkpoints whose ``kind`` bounds a process remembers
KIND_PRODUCT_SESSION = "product_session"  # the marker unit's kind (pipeline/products/base.py, which imports it)
_SESSION_COUNTERS = (
    "llm_calls", "upstream_llm_calls", "failed_llm_calls", "prompt_tokens", "completion_tokens", "embed_calls",
    "embed_tokens", "memories",
)  # fmt: skip
_SEARCH_COUNTERS = ("llm_calls", "upstream_llm_calls", "prompt_tokens", "completion_tokens", "embed_calls")

PRODUCT_SESSIONS_SQL = f"""
CREATE OR REPLACE VIEW product_sessions AS
SELECT regexp_extract(filename, '{CHECKPOINT_PATH}', 1) AS system,
       regexp_extract(filename, '{CHECKPOINT_PATH}', 2) AS dataset,
       haystack_id, session_key, session_position,
       {", ".join(f"CAST(json_extract(text, '$.{c}') AS BIGINT) AS {c}" for c in _SESSION_COUNTERS)},
       CAST(json_extract(text, '$.cost_usd') AS DOUBLE) AS cost_usd,
       CAST(json_extract(text, '$.seconds') AS DOUBLE) AS seconds
FROM read_parquet('{{parquet}}/{CHECKPOINT_FILES}', union_by_name = true, filename = true)
WHERE kind = '{KIND_PRODUCT_SESSION}'
"""

_SEARCH_SUMS = ",\n       ".join(
    f"sum(CAST(json_extract(notes, '$.search_usage.{c}') AS BIGINT)) FILTER (WHERE status = 'ok') AS search_{c}"
    for c in _SEARCH_COUNTERS
)
PRODUCT_USAGE_SQL = f"""
CREATE OR REPLACE VIEW product_usage AS
WITH ingest AS (
    SELECT dataset, system, count(DISTINCT haystack_id) AS n_haystacks, count(*) AS n_sessions,
           sum(llm_calls) AS ingest_llm_calls, sum(upstream_llm_calls) AS ingest_upstream_llm_calls,
           sum(failed_llm_calls) AS ingest_failed_llm_calls, sum(prompt_tokens) AS ingest_prompt_tokens,
           sum(completion_tokens) AS ingest_completion_tokens, sum(cost_usd) AS ingest_cost_usd,
           sum(embed_calls) AS ingest_embed_calls, sum(memories) AS memories_written,
           sum(seconds) AS ingest_seconds, avg(seconds) AS ingest_seconds_per_session,
           quantile_cont(seconds, 0.5) AS ingest_seconds_p50
    FROM product_sessions GROUP BY ALL
), search AS (
    SELECT r.dataset, r.unit AS system, count(*) FILTER (WHERE status = 'ok') AS n_searches,
           count(*) FILTER (WHERE status = 'failed') AS n_searches_failed,
           {_SEARCH_SUMS},
           sum(CAST(json_extract(notes, '$.search_usage.cost_usd') AS DOUBLE)) FILTER (WHERE status = 'ok')
             AS search_cost_usd,
           quantile_cont(retrieval_latency_s, 0.5) FILTER (WHERE status = 'ok') AS search_latency_p50_s,
           quantile_cont(retrieval_latency_s, 0.95) FILTER (WHERE status = 'ok') AS search_latency_p95_s
    FROM retrievals r SEMI JOIN ingest i ON r.dataset = i.dataset AND r.unit = i.system
    GROUP BY ALL
)
SELECT * FROM ingest LEFT JOIN search USING (dataset, system)
ORDER BY dataset, system
"""

VIEWS = ("product_sessions", "product_usage")

VIEW_DOCS: dict[str, str] = {
    "product_sessions": "memory products: every session ingested, with the LLM and embedding calls, tokens, cost "
    "and seconds it took",
    "product_usage": "memory products per dataset x system: ingestion LLM calls, tokens, cost and seconds per "
    "session; search-time calls, tokens and latency p50 / p95",
}

_USAGE = "(every call, cached or not; upstream = not answered by membench's cache)"
VIEW_COLUMNS: dict[str, dict[str, str]] = {
    "product_sessions": {
        "session_position": "position of the session in the haystack",
        "llm_calls": f"LLM calls the product made while ingesting the session {_USAGE}",
        "upstream_llm_calls": "of those, calls sent to the LLM endpoint (not answered by the cache)",
        "failed_llm_calls": "of those, calls that failed after membench's retries",
        "prompt_tokens": "LLM-reported prompt tokens of the session's calls",
        "completion_tokens": "LLM-reported completion tokens of the session's calls",
        "embed_calls": "embedding requests the product made (served by membench's cached encoder)",
        "embed_tokens": "tokens (pinned regex_word_punct count) of the texts the product embedded",
        "memories": "memories the product wrote or changed in the session",
        "cost_usd": "cost of the session's upstream LLM calls (configs/prices.yaml; 0 when unpriced or cached)",
        "seconds": "seconds the product took to ingest the session",
    },
    "product_usage": {
        "n_haystacks": "haystacks the product ingested",
        "n_sessions": "sessions ingested (completed)",
        "ingest_llm_calls": f"LLM calls during ingestion {_USAGE}",
        "ingest_upstream_llm_calls": "ingestion LLM calls sent to the endpoint (not cached)",
        "ingest_failed_llm_calls": "ingestion LLM calls that failed in sessions that still completed",
        "ingest_prompt_tokens": "prompt tokens of the ingestion LLM calls",
        "ingest_completion_tokens": "completion tokens of the ingestion LLM calls",
        "ingest_cost_usd": "cost of the upstream ingestion LLM calls",
        "ingest_embed_calls": "embedding requests during ingestion",
        "memories_written": "memories written",
        "ingest_seconds": "seconds of ingestion in total",
        "ingest_seconds_per_session": "mean seconds to ingest one session",
        "ingest_seconds_p50": "median seconds to ingest one session",
        "n_searches": "successful retrievals (questions searched)",
        "n_searches_failed": "failed retrievals (retried next run)",
        "search_llm_calls": "LLM calls the product made while searching (all questions)",
        "search_upstream_llm_calls": "search-time LLM calls sent to the endpoint (not cached)",
        "search_prompt_tokens": "prompt tokens of the search-time LLM calls",
        "search_completion_tokens": "completion tokens of the search-time LLM calls",
        "search_embed_calls": "embedding requests while searching",
        "search_cost_usd": "cost of the upstream search-time LLM calls",
        "search_latency_p50_s": "median seconds per search (retrieval_latency_s, linear percentile)",
        "search_latency_p95_s": "95th percentile seconds per search (linear percentile)",
    },
}


def _kind_bounds(path: Path) -> tuple[tuple[str, str], ...] | None:
    """(min, max) of the ``kind`` column in each row group with rows, from the file's footer; None
    when the footer does not say (unreadable, no ``kind`` column, no statistics)."""
    try:
        meta = read_footer(path)
    except (OSError, ValueError):  # pyarrow's errors are both; DuckDB's scan then says what it says
        return None
    bounds: list[tuple[str, str]] = []
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        if group.num_rows == 0:
            continue
        chunks = [group.column(c) for c in range(group.num_columns) if group.column(c).path_in_schema == "kind"]
        stats = chunks[0].statistics if len(chunks) == 1 else None
        if stats is None or not stats.has_min_max or not isinstance(stats.min, str) or not isinstance(stats.max, str):
            return None
        bounds.append((stats.min, stats.max))
    return tuple(bounds)


# each checkpoint's ``kind`` bounds, read once per file (checkpoints are replaced by rename: a new inode)
_KIND_BOUNDS: FooterMemo[tuple[tuple[str, str], ...] | None] = FooterMemo(_kind_bounds, MAX_CHECKPOINTS_REMEMBERED)


def _checkpoint_root(con: duckdb.DuckDBPyConnection, parquet: str) -> Path | None:
    """The folder ``parquet`` names for ``con`` (relative paths resolve against its one search path),
    or None when that is not one folder for sure."""
    if Path(parquet).is_absolute():
        return Path(parquet)
    found = con.execute("SELECT current_setting('file_search_path')").fetchone()
    search = found[0] if found else ""
    if not search or "," in search:
        return None
    return Path(search) / parquet


def checkpoints_may_hold(con: duckdb.DuckDBPyConnection, parquet: str, kind: str) -> bool:
    """False only when no memory checkpoint under ``parquet`` can hold a unit of ``kind``: the
    Parquet statistics of every checkpoint's ``kind`` column rule it out.

    Why: ``product_sessions`` and ``agent_memory_log`` are made only when some checkpoint holds a
    ``product_session`` or ``agent_op`` unit, and finding out was a ``union_by_name`` bind and a scan
    of every checkpoint per view and connection (~0.15 s each at 2,000 haystacks, four at a run's
    end) for views that are then dropped in every run without a product or agent memory. A footer
    read once per file and process says the same; whatever it cannot say leaves the scan to decide.
    """
    root = _checkpoint_root(con, parquet)
    if root is None:
        return True
    for path in root.glob(CHECKPOINT_FILES):
        bounds = _KIND_BOUNDS.get(path)
        if bounds is None or any(low <= kind <= high for low, high in bounds):
            return True
    return False


def create_product_views(con: duckdb.DuckDBPyConnection, tables: set[str], parquet: str) -> list[str]:
    """``product_sessions`` (and ``product_usage`` with ``retrievals``) once a product memory has
    ingested a session (skipped before); over the checkpoints under ``parquet`` (the base views' files)."""
    if not checkpoints_may_hold(con, parquet, KIND_PRODUCT_SESSION):
        return []
    try:
        con.execute(PRODUCT_SESSIONS_SQL.format(parquet=parquet.replace("'", "''")))
        found = con.execute("SELECT count(*) FROM product_sessions").fetchone()
    except duckdb.IOException:  # no memory checkpoint yet
        return []
    except duckdb.BinderException:  # checkpoints without the unit columns: nothing to read
        con.execute("DROP VIEW IF EXISTS product_sessions")
        return []
    if not found or not found[0]:
        con.execute("DROP VIEW product_sessions")
        return []
    if "retrievals" not in tables:
        return ["product_sessions"]
    con.execute(PRODUCT_USAGE_SQL)
    return ["product_sessions", "product_usage"]
