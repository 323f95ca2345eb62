"""membench's own MCP memory server (official ``mcp`` SDK, stdio): a small, real reference server.

Tools: ``remember(text, key, session)`` stores a memory (idempotent per ``key``: a resent item is
not stored twice), ``note(text, session)`` appends one (not idempotent: a resent note is stored
again, as many real servers do) and ``recall(query, k)`` returns the ``k`` memories sharing the most
words with the query, one per line as ``[<key>] <text>``. The store is a JSON file (``--data``),
rewritten atomically after each change, so a fresh server process continues where the last one
stopped. Transport: stdio, or streamable HTTP on ``--host``/``--port`` with ``--http``.

Fault injection for membench's tests, only with ``--faults``: a ``recall`` query containing
``#die`` exits the process, ``#hang`` never answers, ``#error`` returns a tool error; with
``--hang-at N`` the first ``remember``/``note`` that finds N memories stored (and no
``<data>.hung`` file) writes ``<data>.hung`` and never answers: a crash point in mid-ingestion.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: dict[str, dict[str, str]] = json.loads(path.read_text()) if path.exists() else {}

    def put(self, key: str, text: str, session: str) -> bool:
        if key in self.items:
            return False
        self.items[key] = {"text": text, "session": session}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.items))
        os.replace(tmp, self.path)
        return True

    def append(self, text: str, session: str) -> str:
        key = f"note{len(self.items)}"
        self.put(key, text, session)
        return key

    def search(self, query: str, k: int) -> list[tuple[str, str]]:
        q = _words(query)
        scored = [(len(q & _words(v["text"])), i, key) for i, (key, v) in enumerate(self.items.items())]
        ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:k]
        return [(key, self.items[key]["text"]) for _, _, key in ranked]


def _hang_here(store: Store, hang_at: int | None) -> None:
    """The test crash point: hang (once per memory file) when ``hang_at`` memories are stored."""
    marker = store.path.with_name(store.path.name + ".hung")
    if hang_at is not None and len(store.items) == hang_at and not marker.exists():
        marker.write_text(str(os.getpid()))
        time.sleep(3600)


def build(store: Store, faults: bool, hang_at: int | None = None) -> MCPServer:
    server = MCPServer("membench-memory")

    @server.tool()
    def remember(text: str, key: str, session: str = "") -> str:
        """Store one memory under a unique key (resending a key stores nothing)."""
        _hang_here(store, hang_at if faults else None)
        return "stored" if store.put(key, text, session) else "already stored"

    @server.tool()
    def note(text: str, session: str = "") -> str:
        """Append one memory under a new key (every call stores one more)."""
        _hang_here(store, hang_at if faults else None)
        return f"stored as {store.append(text, session)}"

    @server.tool()
    def recall(query: str, k: int = 5) -> str:
        """The k stored memories sharing most words with the query, one per line: [key] text."""
        if faults and "#die" in query:
            sys.stderr.write("membench-memory: dying on request\n")
            sys.stderr.flush()
            os._exit(3)
        if faults and "#hang" in query:
            time.sleep(3600)
        if faults and "#error" in query:
            raise ToolError("recall failed on request")
        return "\n".join(f"[{key}] {text}" for key, text in store.search(query, k))

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="the JSON file holding the memories")
    parser.add_argument("--faults", action="store_true", help="enable the test fault triggers")
    parser.add_argument("--hang-at", type=int, help="with --faults: hang once when this many memories are stored")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    server = build(Store(Path(args.data)), args.faults, args.hang_at)
    if args.http:
        server.run("streamable-http", host=args.host, port=args.port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
