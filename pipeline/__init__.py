"""membench: a benchmark pipeline for long-term conversational memory (the library under Dagster).

One role per folder, and one layer list, bottom to top: a module imports only from its own layer
or the layers below it (tests/tree/test_layers.py checks every import, function-level ones too, and
that no two modules import each other round). Dagster is imported only by the last four layers:
``resources`` (the external systems as Dagster resources), ``assets`` (the stages as
software-defined assets), ``pipeline.cli`` (only inside ``membench forget --yes``) and
``pipeline.definitions`` (what ``dagster`` loads).

A newcomer reads it bottom to top: each layer is explained by the ones below it.
"""

LAYERS: tuple[str, ...] = (
    "pipeline.util",  # generic helpers: file locks, coalesced work, fingerprints, threads, heap, registries
    "pipeline.core",  # canonical records and schemas, partition keys, dataset families, statuses, tokens
    "pipeline.config",  # the config model, its errors, the resolved specs record, printed commands
    "pipeline.llm",  # OpenAI-compatible endpoints: protocol, plain client, cache, rate limits, prices
    "pipeline.metrics",  # pure metric functions and their pinned names and aggregates
    "pipeline.catalog",  # the DuckDB views over stored tables and the docs of every view and column
    "pipeline.store",  # Parquet files per (stage, question), the catalog file, canonical-table reads
    "pipeline.embeddings",  # embedding model, vector cache, cached encoder
    "pipeline.datasets",  # one loader per raw format, conversion to canonical tables, samples
    "pipeline.run",  # the per-question stage driver, progress, stale units, stored-status index
    "pipeline.memory",  # membench's own memory systems and session-by-session ingestion
    "pipeline.products",  # memory products through their libraries, behind membench's LLM proxy
    "pipeline.readers",  # readers: LLM and offline
    "pipeline.judges",  # the official judges and the judgments stage
    "pipeline.agentic",  # tool-using readers and memories, MCP servers
    "pipeline.kinds",  # the built-in kinds, plugins, and resolving a config into specs
    "pipeline.report",  # results.json, report.html, compare, leaderboard
    "pipeline.provenance",  # run manifest, dataset releases, membench verify
    "resources",  # Dagster resources over the plain clients
    "assets",  # Dagster assets: the stages
    "pipeline.cli",  # membench
    "pipeline.definitions",  # the Dagster Definitions of a config
)
