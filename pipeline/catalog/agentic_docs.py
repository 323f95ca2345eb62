"""What the agentic views and columns mean (merged into pipeline.catalog.docs: DuckDB comments,
README table). Its own module without imports, so the report's docs need not import the views."""

from __future__ import annotations

# what each view / column means (merged into pipeline.catalog.docs: DuckDB comments, README table)
VIEW_DOCS: dict[str, str] = {
    "agentic_answers": "per (question, system, agentic reader): the answer with its tool calls, LLM calls and cap",
    "agentic_tool_calls": "one row per tool call of an agentic answer: step, query, units returned, error",
    "agentic_report": "per dataset x system x agentic reader: failures, capped answers, mean tool / LLM calls",
    "agentic_retrieval_metrics": "per (question, system, agentic reader, ranking, level): retrieval metrics "
    "of the units the agent retrieved (union) and of its first query",
    "agent_memory_log": "memory kind agent: every tool call its agent made while ingesting each session",
}
_STEPS = {
    "tool_calls": "agentic readers: tool calls made (NULL for other readers)",
    "llm_calls": "agentic readers: LLM calls made (tool steps + the answer)",
    "capped": "agentic readers: the tool-call budget (max_steps) ran out and the answer was asked for",
}
ANSWER_COLUMNS: dict[str, str] = {
    **_STEPS,
    "agent_trace": "agentic readers: every step as JSON (tool calls with query, k, unit ids, errors; tokens)",
}
VIEW_COLUMNS: dict[str, dict[str, str]] = {
    "agentic_answers": {**_STEPS, "prediction": "the answer text (NULL when the answer failed)"},
    "agentic_tool_calls": {
        "step": "0-based LLM call of the answer that made the tool call",
        "tool": "tool name the model called",
        "query": "search query (search_memory)",
        "k": "results asked for (after clipping to max_k)",
        "n_units": "units the search returned",
        "unit_ids": "ids of the units the search returned, ranked",
        "error": "what was wrong with the call, as told to the model (NULL when it ran)",
        "step_prompt_tokens": "prompt tokens of the step's LLM call",
        "step_completion_tokens": "completion tokens of the step's LLM call",
        "step_cache_hit": "true when the step's reply came from the LLM cache",
    },
    "agentic_report": {
        "n_answers": "answer rows (ok and failed)",
        "n_failed": "failed answers (retried next run)",
        "n_capped": "answers given after the tool-call budget ran out",
        "mean_tool_calls": "mean tool calls per ok answer",
        "max_tool_calls": "most tool calls of one answer",
        "mean_llm_calls": "mean LLM calls per ok answer",
        "mean_prompt_tokens": "mean prompt tokens per ok answer (all steps)",
        "mean_completion_tokens": "mean completion tokens per ok answer (all steps)",
        "mean_latency_s": "mean LLM seconds per ok answer (all steps)",
        "union_evidence_recall": "mean turn-level evidence recall over every unit the agent retrieved",
        "first_query_evidence_recall": "mean turn-level evidence recall of the agent's first search",
    },
    "agent_memory_log": {
        "session_position": "position of the session in the haystack",
        "op_index": "0-based position of the call in its session's log",
        "step": "0-based LLM call of the session's loop that made the tool call",
        "tool": "add_memory, update_memory, delete_memory or search_memory (or what the model named)",
        "arguments": "the call's arguments as JSON (or the raw text when it was not JSON)",
        "memory_id": "memory added, updated or deleted (NULL for searches and failed calls)",
        "error": "what was wrong with the call, as told to the agent (NULL when it ran)",
    },
    "agentic_retrieval_metrics": {
        "ranking": "union (every unit retrieved, first-seen order) or first_query (the first search's ranking)",
        "n_context_units": "units the agent saw in this ranking",
    },
}
