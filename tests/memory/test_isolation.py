"""The isolation canary (``membench check-isolation``): real memories, two haystacks, one canary.

Isolated: membench's own BM25 memory and its own MCP server with one memory file per haystack.
Leaked: the same MCP server with one file for every haystack, and a memory whose store is shared by
the process. Inconclusive (the control failed) and failed checks never read as isolated.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.catalog.manifest import FLAG_ISOLATION_LEAK
from pipeline.cli.main import main
from pipeline.config.model import PROJECT_ROOT, load_config
from pipeline.provenance.manifest import integrity_flags
from pipeline.report.flags_html import system_badges
from pipeline.store.results import ResultStore
from tests.support.leaky_memory import LeakyMemory
from tests.support.mcp import OWN, OWN_SERVER

SAMPLE = PROJECT_ROOT / "pipeline" / "sample_data" / "locomo_sample.json"


def _config(tmp_path: Path) -> Path:
    shared = {**OWN, "command": [a.replace("{data_file}", str(tmp_path / "one_file.json")) for a in OWN_SERVER]}
    systems = [
        {"name": "bm25", "kind": "flat_bm25"},
        {"name": "mcp_own", "kind": "mcp", "params": OWN},
        {"name": "mcp_shared", "kind": "mcp", "params": shared},
        {"name": "leaky", "kind": "tests.support.leaky_memory:LeakyMemory"},
        {"name": "forgetful", "kind": "tests.support.leaky_memory:ForgetfulMemory"},
        {"name": "broken", "kind": "tests.support.leaky_memory:BrokenMemory"},
    ]
    cfg = tmp_path / "iso.yaml"
    cfg.write_text(json.dumps({
        "results_dir": str(tmp_path / "res"),
        "datasets": [{"name": "loco", "loader": "locomo", "path": str(SAMPLE)}],
        "memory_systems": systems,
    }))  # fmt: skip
    return cfg


def test_canary_statuses_flags_and_badges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    LeakyMemory.shared.clear()
    cfg = _config(tmp_path)
    systems = ["bm25", "mcp_own", "mcp_shared", "leaky", "forgetful", "broken"]
    assert main(["--config", str(cfg), "check-isolation", *systems]) == 1  # a leak: exit status 1
    out = capsys.readouterr().out
    assert "bm25 (flat_bm25): isolated" in out and "mcp_own (mcp): isolated" in out
    plugin = "tests.support.leaky_memory"
    assert "mcp_shared (mcp): LEAKED" in out and f"leaky ({plugin}:LeakyMemory): LEAKED" in out
    assert f"forgetful ({plugin}:ForgetfulMemory): inconclusive" in out
    assert f"broken ({plugin}:BrokenMemory): failed: RuntimeError: store unreachable" in out
    store = ResultStore(results_dir=str(tmp_path / "res"))
    store.refresh_catalog()
    with store.connect() as con:
        rows = dict(con.execute("SELECT system, status FROM isolation_checks").fetchall())
        assert rows == {"bm25": "isolated", "mcp_own": "isolated", "mcp_shared": "leaked", "leaky": "leaked",
                        "forgetful": "inconclusive", "broken": "failed"}  # fmt: skip
        entry = {"dataset": "loco", "sliced": False, "n_questions_loaded": 0}
        flags = integrity_flags(con, load_config(str(cfg)), [entry])
    leaks = sorted(f["system"] for f in flags if f["flag"] == FLAG_ISOLATION_LEAK)
    assert leaks == ["leaky", "mcp_shared"]

    class Data:  # what the report reads: the integrity_flags rows
        def rows(self, section: str) -> list[dict[str, object]]:
            return flags if section == "integrity_flags" else []

    badges = system_badges(Data(), "loco")
    assert set(badges) == {"leaky", "mcp_shared"} and "leaks across haystacks" in badges["leaky"]
    assert not list((tmp_path / "res").glob(".isolation-*"))  # the check's own state is removed
    # a fixed leak clears the flag: the last check decides
    LeakyMemory.shared.clear()
    assert main(["--config", str(cfg), "check-isolation", "bm25"]) == 0
    assert main(["--config", str(cfg), "check-isolation", "nope"]) == 2
    assert "no memory system nope" in capsys.readouterr().err
