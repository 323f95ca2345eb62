"""Seconds until a stage stops on a dead LLM endpoint, with the shipped defaults.

Two LongMemEval-format datasets of the bundled oracle sample (16 questions), the ``full_context``
memory, an LLM reader whose ``llm:`` block sets only ``base_url`` and ``model`` (so ``max_retries``
5, ``max_concurrency`` 4, ``timeout_s`` 60, ``connect_timeout_s`` 5, ``unreachable_retries`` 2,
``probe_after_s`` 10, ``stop_after_unreachable`` 5 are the shipped defaults) and the offline ``lme_contains_normalized``
judge. The real ``full_benchmark`` job runs in-process against:

- refused: a port nothing listens on (connection refused at once);
- black-holed: a listening socket whose accept queue (backlog 0) is already full, so the kernel
  drops every new SYN and a connection attempt hangs until the client gives up;
- hanging: a listening socket that never accepts, with room in its queue: the kernel completes
  every connection and takes the request, and nothing ever answers (a wedged server); cut by the
  client's probe (``probe_after_s`` 10, pipeline/llm/hang.py), not by the 60 s reply timeout.

It prints, per case, the answers stage's own seconds (its ``seconds`` metadata, from its first
pending question to the stop), how many questions were tried and how many were not attempted,
and whether the judgments stage claimed an endpoint stop. Target: <= 30 s to the stop.

    .venv/bin/python benchmarks/dead_endpoint.py
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dagster as dg  # noqa: E402

from pipeline.config.model import load_config  # noqa: E402
from pipeline.definitions import build_defs  # noqa: E402
from pipeline.store.results import ResultStore  # noqa: E402

SAMPLE = ROOT / "pipeline/sample_data/longmemeval_oracle_sample.json"


@contextmanager
def refused() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield f"http://127.0.0.1:{port}/v1"


@contextmanager
def black_holed() -> Iterator[str]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        filler.close()
        srv.close()


@contextmanager
def hanging() -> Iterator[str]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(128)  # never accepted: connections complete in the kernel, requests are never read
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}/v1"
    finally:
        srv.close()


def _config(folder: Path, base_url: str) -> Path:
    cfg = {
        "name": "dead_endpoint",
        "results_dir": str(folder / "res"),
        "datasets": [
            {"name": "lme_a", "loader": "longmemeval", "path": str(SAMPLE)},
            {"name": "lme_b", "loader": "longmemeval", "path": str(SAMPLE)},
        ],
        "memory_systems": [{"name": "full", "kind": "full_context"}],
        "readers": [{"name": "llm", "kind": "llm"}],
        "judges": [{"name": "lme_contains_normalized", "kind": "lme_contains_normalized"}],
        "llm": {"base_url": base_url, "model": "dead-model", "api_key_env": "MEMBENCH_BENCH_KEY"},
    }
    path = folder / "dead_endpoint.yaml"
    path.write_text(yaml.safe_dump(cfg))
    load_config.cache_clear()
    return path


def _stage_meta(result: dg.ExecuteInProcessResult, stage: str) -> dict[str, Any]:
    """The stage step's run-level metadata: its output's (each question's materialization has its own)."""
    for e in result.all_events:
        if e.event_type == dg.DagsterEventType.STEP_OUTPUT and (e.step_key or "").endswith(f"__{stage}"):
            meta = {k: v.value for k, v in e.step_output_data.metadata.items()}
            if "computed" in meta:  # the asset's output, not one of its checks'
                return meta
    raise LookupError(f"no output of stage {stage}")


def measure(name: str, endpoint: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp, endpoint as url:
        folder = Path(tmp)
        os.environ["DAGSTER_HOME"] = str(folder / "home")
        config = _config(folder, url)
        with dg.instance_for_test() as instance:
            job = build_defs(str(config)).resolve_job_def("full_benchmark")
            result = job.execute_in_process(instance=instance, raise_on_error=False)
        answers, judgments = _stage_meta(result, "answers"), _stage_meta(result, "judgments")
        rows = ResultStore(results_dir=str(folder / "res")).query("SELECT error FROM answers").to_pylist()
        skipped = sum(1 for r in rows if (r["error"] or "").startswith("not attempted"))
        print(
            f"{name}: answers stage stopped after {answers['seconds']:.1f} s "
            f"({len(rows) - skipped} questions tried, {skipped} not attempted; target <= 30 s); "
            f"judgments claimed an endpoint stop: {'stopped' in judgments}"
        )


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    measure("refused", refused())
    measure("black-holed", black_holed())
    measure("hanging", hanging())


if __name__ == "__main__":
    main()
