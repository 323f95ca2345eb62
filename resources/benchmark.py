"""The ``benchmark`` resource (which config file a run uses) and the ``store`` resource (its results)."""

from __future__ import annotations

import dagster as dg

from pipeline.config.model import BenchmarkConfig, config_path_from_env, load_config
from pipeline.kinds.resolve import ResolvedConfig, load_benchmark
from pipeline.store.results import ResultStore


class BenchmarkResource(dg.ConfigurableResource):
    """The benchmark config of the definitions (``config_path``, set by resources/factory.py from
    ``$MEMBENCH_CONFIG``). A run config may not switch it to another config: the assets' keys and
    partitions belong to the config the definitions loaded (assets/layout.py check_scope refuses)."""

    config_path: str = ""

    def resolved(self) -> ResolvedConfig:
        """The benchmark object: the config resolved once per process (load_benchmark);
        the assets pass it (or the specs in it) down to the stages."""
        return load_benchmark(self.config_path or str(config_path_from_env()))

    def load(self) -> BenchmarkConfig:
        return load_config(self.config_path or str(config_path_from_env()))

    def store(self) -> ResultStore:
        return ResultStore(results_dir=str(self.load().resolved_results_dir()))


class ResultStoreResource(dg.ConfigurableResource):
    """The run's result store (``pipeline.store.results.ResultStore``, a plain value), built from the benchmark:
    its ``results_dir`` is the config's, so a stage can never write one config's results elsewhere."""

    benchmark: BenchmarkResource

    def store(self) -> ResultStore:
        return self.benchmark.store()
