"""Which LLM endpoint the judges use: the config's ``judge_llm`` when set, else the reader's.

Why a separate endpoint: a benchmark answers with the model under test and judges with a fixed,
usually stronger one (LongMemEval and LoCoMo both judge with GPT-4o-class models), often at
another provider with its own key and quota. The judge model is part of every judgment's unit
hash, so pointing ``judge_llm`` at a new model re-runs exactly the judgments: answers, retrievals
and ingestion are unchanged and skipped.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.config import PROJECT_ROOT, BenchmarkConfig, LLMConfig

if TYPE_CHECKING:
    from pipeline.readers.base import LLMClient

JUDGE_CACHE_SUBDIR = "llm_cache"  # same cache as the reader: keys hash (model, messages, params)


@lru_cache(maxsize=8)
def _judge_resource(cfg: LLMConfig, cache_dir: str, prices_path: str) -> LLMClient:
    """One resource per judge endpoint (its concurrency gate and rate limit are shared by all judges)."""
    from resources.llm import LLMResource

    return LLMResource.from_config(cfg, cache_dir=cache_dir, prices_path=prices_path)


def judge_client(cfg: BenchmarkConfig, llm: LLMClient | None) -> LLMClient | None:
    """The judges' LLM client: ``judge_llm`` (its key read from its own ``api_key_env``) or ``llm``."""
    if cfg.judge_llm is None:
        return llm
    cache_dir = str(cfg.resolved_results_dir() / JUDGE_CACHE_SUBDIR)
    return _judge_resource(cfg.judge_llm, cache_dir, str((PROJECT_ROOT / Path(cfg.prices_path)).resolve()))
