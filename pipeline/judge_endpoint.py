"""Which LLM endpoint the judges use: the config's ``judge_llm`` when set, else the reader's.

Why a separate endpoint: a benchmark answers with the model under test and judges with a fixed,
usually stronger one (LongMemEval and LoCoMo both judge with GPT-4o-class models), often at
another provider with its own key and quota. The judge model is part of every judgment's unit
hash, so pointing ``judge_llm`` at a new model re-runs exactly the judgments: answers, retrievals
and ingestion are unchanged and skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.config import PROJECT_ROOT, BenchmarkConfig, LLMConfig

if TYPE_CHECKING:
    from pipeline.readers.base import LLMClient

JUDGE_CACHE_SUBDIR = "llm_cache"  # same cache as the reader: keys hash (model, messages, params)


ClientFactory = Callable[[LLMConfig, str, str], "LLMClient"]
_FACTORY: list[ClientFactory] = []


def set_client_factory(factory: ClientFactory) -> None:
    """Register how to build a client for an endpoint (resources/llm.py does, on import).

    Why a hook: the library below never imports the Dagster resources layer above it.
    """
    _FACTORY[:] = [factory]
    _judge_resource.cache_clear()


@lru_cache(maxsize=8)
def _judge_resource(cfg: LLMConfig, cache_dir: str, prices_path: str) -> LLMClient:
    """One client per judge endpoint (its concurrency gate and rate limit are shared by all judges)."""
    if not _FACTORY:
        raise RuntimeError("no LLM client factory registered: import resources.llm first (the definitions do)")
    return _FACTORY[0](cfg, cache_dir, prices_path)


def judge_client(cfg: BenchmarkConfig, llm: LLMClient | None) -> LLMClient | None:
    """The judges' LLM client: ``judge_llm`` (its key read from its own ``api_key_env``) or ``llm``."""
    if cfg.judge_llm is None:
        return llm
    cache_dir = str(cfg.resolved_results_dir() / JUDGE_CACHE_SUBDIR)
    return _judge_resource(cfg.judge_llm, cache_dir, str((PROJECT_ROOT / Path(cfg.prices_path)).resolve()))
