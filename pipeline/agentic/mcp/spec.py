"""What the MCP memory kind and its client share, without importing the SDK (~5 s to import on
the shared machine, so only a run that starts a server pays it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.store.results import ResultStore

DATA_SUBDIR = "mcp_memory"


class McpCallFailed(RuntimeError):
    """An MCP request failed (tool error, dead or hung server, bad reply): the unit fails."""


@dataclass(frozen=True)
class ServerSpec:
    """Where the server is: a stdio ``command`` (argv) with ``env``, or a streamable-HTTP ``url``."""

    command: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    url: str | None = None
    cwd: str | None = None

    def describe(self) -> str:
        return self.url or " ".join(self.command)


def safe_name(name: str) -> str:
    """``name`` usable as (part of) a file name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def data_file(root: Path, key: str, haystack_id: str, suffix: str) -> Path:
    """The server's memory file of one (system, haystack)."""
    return root / key / f"{safe_name(haystack_id)}{suffix}"


def mcp_data_dir(store: ResultStore) -> str:
    """The run's folder of MCP servers' memory files (``<results>/parquet/mcp_memory``)."""
    return str(store.parquet_root / DATA_SUBDIR)
