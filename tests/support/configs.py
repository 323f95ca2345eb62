"""Config files with one section changed, and the config mistakes each must be refused for."""

from __future__ import annotations

from pathlib import Path

import yaml

from pipeline.config.model import load_config
from tests.support.paths import PROJECT_ROOT

LOCOMO = {"name": "loco", "loader": "locomo", "path": str(PROJECT_ROOT / "pipeline/sample_data/locomo_sample.json")}


def write_config(tmp_path: Path, **sections: object) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"results_dir": str(tmp_path / "res"), "datasets": [LOCOMO], **sections}))
    load_config.cache_clear()
    return path


CASES = [
    (
        {
            "memory_systems": [
                {"name": "rag", "kind": "rag"},
                {"name": "full", "kind": "full_context"},
                {"name": "hybrid", "kind": "hybird"},
            ]
        },
        r"memory_systems\[2\] \(name: hybrid\): kind: unknown memory system 'hybird'; "
        r"known: agent, flat_bm25, flat_dense, full_context, graphiti, hindsight, hybrid, langmem,",
    ),
    (
        {"memory_systems": [{"name": "rag", "kind": "rag", "params": {"topk": 5}}]},
        r"memory_systems\[0\] \(name: rag\): params.topk: unknown parameter; allowed: .*top_k",
    ),
    (
        {"readers": [{"name": "offline", "kind": "offlien"}]},
        r"readers\[0\] \(name: offline\): kind: unknown reader 'offlien'; known: agentic, llm, offline",
    ),
    (
        {"judges": [{"name": "f1", "kind": "locomo_f1"}, {"name": "x", "kind": "locomo_f2"}]},
        r"judges\[1\] \(name: x\): kind: unknown judge 'locomo_f2'; known: ",
    ),
    (
        {"judges": [{"name": "f1", "kind": "locomo_f1", "params": {"model": "gpt-4o"}}]},
        r"judges\[0\] \(name: f1\): params.model: unknown parameter; allowed: none",
    ),
    (
        {"readers": [{"name": "gpt", "kind": "llm"}]},
        r"readers\[0\] \(name: gpt\): kind: 'llm' needs an LLM but the config has no 'llm:' block",
    ),
    (
        {"judges": [{"name": "j", "kind": "locomo_llm_judge"}]},
        r"judges\[0\] \(name: j\): kind: 'locomo_llm_judge' needs an LLM but the config has no 'judge_llm:' or",
    ),
    (
        {"memory_systems": [{"name": "rag", "kind": "rag", "datasets": ["locomo"]}]},
        r"memory_systems\[0\] \(name: rag\): datasets: unknown dataset\(s\) \['locomo'\]; the config's",
    ),
    (
        {"memory_systems": [{"name": "rag", "kind": "rag", "params": {"top_k": "ten"}}]},
        r"memory_systems\[0\] \(name: rag\): params.top_k: Input should be a valid integer.*\(got 'ten'\)",
    ),
]
