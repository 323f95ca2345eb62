"""Build the Dagster resources of a benchmark config.

Why these, all from the one config: the benchmark object decides every setting that enters a
unit hash, so the resources are derived from it, never configured apart. ``benchmark`` resolves
the config once per process; ``store`` is its result store; ``embeddings`` its encoder settings
(one resource for the embeddings asset and every stage); ``llm`` and ``judge_llm`` the readers'
and the judges' clients (the judges' is ``judge_llm:`` when the config has one, else ``llm:``).
The API key never travels through Dagster: it is read from ``$<api_key_env>`` at call time.
"""

from __future__ import annotations

from typing import Any

from pipeline.config.model import BenchmarkConfig
from pipeline.llm.client import ROLE_JUDGES, ROLE_READER
from resources.benchmark import BenchmarkResource, ResultStoreResource
from resources.embeddings import EmbeddingResource
from resources.llm import LLMResource


def build_resources(cfg: BenchmarkConfig) -> dict[str, Any]:
    """The resources the assets of ``cfg`` declare, derived from ``cfg`` alone."""
    benchmark = BenchmarkResource(config_path=cfg.source)
    return {
        "benchmark": benchmark,
        "store": ResultStoreResource(benchmark=benchmark),
        "embeddings": EmbeddingResource.from_config(cfg.embeddings),
        "llm": LLMResource(benchmark=benchmark, role=ROLE_READER),
        "judge_llm": LLMResource(benchmark=benchmark, role=ROLE_JUDGES),
    }
