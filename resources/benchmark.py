"""The ``benchmark`` resource: which config file a run uses, and the result store it implies."""

from __future__ import annotations

import dagster as dg

from pipeline.config import BenchmarkConfig, config_path_from_env, load_config
from pipeline.store import ResultStore


class BenchmarkResource(dg.ConfigurableResource):
    """Selects the benchmark config: ``config_path`` (run config) or ``$MEMBENCH_CONFIG``."""

    config_path: str = ""

    def load(self) -> BenchmarkConfig:
        return load_config(self.config_path or str(config_path_from_env()))

    def store(self) -> ResultStore:
        return ResultStore(results_dir=str(self.load().resolved_results_dir()))
