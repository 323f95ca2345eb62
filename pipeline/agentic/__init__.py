"""Agentic modes: an LLM that uses memory through tools instead of reading one pasted context.

- ``loop``: the OpenAI tool-calling loop (bounded steps, every step recorded, every LLM call made
  through membench's cached LLM client, so a rerun replays from the cache and makes no request).
- ``search``: ``search_memory(query, k)`` over any ingested memory system (plugins included).
- ``reader``: reader kind ``agentic`` (listed with the built-in readers, pipeline/kinds/readers.py).
- ``agent_memory`` and ``mcp``: memory kinds whose ingestion or retrieval is an agent's tool calls.

The retrieval metrics of agentic answers are a report table (pipeline/report/agentic.py).
"""
