"""Parameters of the ``hybrid`` memory: every channel and stage can be switched in config.

Why one strict schema: an ablation ("hybrid without graph") must be one config change, and a
misspelt switch must fail the run rather than silently benchmark the full system.

Defaults: the seed 003 design values (BM25 k1 1.2 / b 0.75, damping 0.85, four channels, RRF)
except the fusion choices below, measured on LongMemEval_S (benchmarks/retrieval_lme_s.py, session
level; seed values in brackets).

First round (120 questions = two disjoint 60-question samples):

- ``rrf_k`` [60]: with k = 60, 1/(k + r) is nearly linear in r, so RRF ranks by the average
  rank over channels and a unit that one channel is sure of (rank 1) but another ranks 20th loses
  to units every channel ranks mid-table. k = 10 lets confident top ranks count: recall_all@5
  0.883 -> 0.917, ndcg_any@10 0.935 -> 0.948.
- ``graph_seeds`` 3 [5]: every extra seed hands part of the graph's vote to the neighbourhood
  of a lower-ranked, less likely relevant turn (recall_all@5 0.917 -> 0.933).
- ``weights.temporal`` 0.5 [1.0]: the temporal channel's vote is only as good as the session
  dates; in LongMemEval_S 21 of 68 questions with a time expression have a gold session dated
  outside the window (sessions report events days or weeks later), so its vote counts half
  (recall_all@5 0.933 -> 0.942).

Second round (the 418 questions split in two halves of 209: chosen on half A, checked on the
held-out half B; recall_any@5 / recall_all@5 / ndcg_any@10):

- ``temporal_selectivity`` and ``strip_time_expressions`` on (both new design rules, see
  HybridMemory._fusion_weights and channels.temporal.strip_expressions): A .971/.919/.922 ->
  .976/.914/.926, B .986/.947/.946 -> .986/.952/.953.
- ``rrf_k`` 5 and ``hops`` 1 [2], the best of {5, 10} x {1, 2} on A (.986/.928/.932; k 10 /
  hops 2 gave .976/.914/.926); on B .986/.947/.950.
- Final (selectivity from the share of the memory's turns in the window): A .986/.923/.932,
  B .986/.947/.951, all 418: .986 / .935 / .940 (was .978 / .933 / .934 before this round).
  The 6 remaining misses: 2 preference questions, "previous occupation", and 3 temporal ones
  (one gold session dated 10 days before "5 days ago").

"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pipeline.memory.params import SystemParams

CHANNELS = ("semantic", "bm25", "graph", "temporal")


class ChannelSwitches(SystemParams):
    """Which channels enter the fusion (all on = the full hybrid)."""

    semantic: bool = True
    bm25: bool = True
    graph: bool = True
    temporal: bool = True

    def enabled(self) -> list[str]:
        return [c for c in CHANNELS if getattr(self, c)]


class ChannelWeights(SystemParams):
    """Per-channel weights inside RRF: fused = sum_c w_c / (rrf_k + rank_c)."""

    semantic: float = Field(default=1.0, ge=0)
    bm25: float = Field(default=1.0, ge=0)
    graph: float = Field(default=1.0, ge=0)
    temporal: float = Field(default=0.5, ge=0)  # see the module docstring

    def as_dict(self) -> dict[str, float]:
        return {c: getattr(self, c) for c in CHANNELS}


class HybridParams(SystemParams):
    """The ``params`` block of a ``kind: hybrid`` memory system."""

    channels: ChannelSwitches = ChannelSwitches()
    weights: ChannelWeights = ChannelWeights()
    rrf_k: int = Field(default=5, ge=0)
    channel_depth: int | None = Field(default=100, ge=1)  # ranks of each channel that enter RRF
    # what a retrieved unit is: a turn, or a whole session (turn scores pooled per session)
    granularity: Literal["turn", "session"] = "turn"
    session_pool: Literal["max", "mean", "sum"] = "max"
    session_bm25: Literal["document", "pool"] = "document"  # BM25 over session text, or pooled
    # semantic pseudo-relevance feedback (0 turns = off)
    prf_turns: int = Field(default=0, ge=0)
    prf_weight: float = Field(default=0.5, ge=0)
    # lexical
    bm25_k1: float = Field(default=1.2, gt=0)
    bm25_b: float = Field(default=0.75, ge=0, le=1)
    bm25_stem: bool = True
    # graph
    damping: float = Field(default=0.85, ge=0, le=1)
    hops: int = Field(default=1, ge=1, le=5)
    graph_seeds: int = Field(default=3, ge=1)
    # seeds = top of the content fusion, or the top of each channel (measured on LongMemEval_S,
    # 418 q.: "channels" recall_all@5 0.921 / ndcg_any@10 0.938 vs "fusion" 0.933 / 0.934)
    graph_seed_from: Literal["fusion", "channels"] = "fusion"
    knn: int = Field(default=5, ge=0)
    knn_min_sim: float = Field(default=0.5, ge=-1, le=1)
    entity_weight: float = Field(default=1.0, ge=0)
    entity_max_df: float = Field(default=0.05, gt=0, le=1)
    temporal_edge_weight: float = Field(default=0.5, ge=0)
    # temporal
    half_life_days: float = Field(default=30.0, gt=0)
    temporal_slack_days: float = Field(default=1.0, ge=0)
    temporal_order: Literal["relevance", "recency"] = "relevance"  # how in-window units are ranked
    # scale the temporal weight by log2(candidates / in-window candidates) (see HybridMemory._fusion_weights)
    temporal_selectivity: bool = True
    temporal_selectivity_cap: float = Field(default=3.0, gt=0)
    # content channels (semantic, bm25) get the question without its parsed time expressions
    strip_time_expressions: bool = True
    # rerank (runs only when a cross-encoder path is configured here or in MemoryDeps)
    rerank: bool = True
    cross_encoder_path: str | None = None
    rerank_top_n: int = Field(default=50, ge=1)
    rerank_batch_size: int = Field(default=16, ge=1)
    rerank_max_length: int = Field(default=512, ge=16)
    # output
    top_k: int = Field(default=20, ge=1)
    token_budget: int | None = Field(default=4000, ge=1)
    context_order: Literal["time", "rank"] = "time"

    @model_validator(mode="after")
    def _some_channel(self) -> HybridParams:
        if not self.channels.enabled():
            raise ValueError("hybrid: every channel is switched off; enable at least one")
        return self
