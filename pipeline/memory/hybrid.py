"""The ``hybrid`` memory: four channels fused by RRF, optional cross-encoder rerank, token budget.

Design (seed 003, Hindsight-style): for each question
1. channel scores over the memory's turn units:
   semantic (cosine), bm25 (bm25s, k1 1.2, b 0.75), temporal (question time expression ->
   window relative to the question date -> recency decay; abstains without an expression) and
   graph (spreading activation from the top ``graph_seeds`` units of the other channels' fusion
   and the units naming a question entity, over entity / same-session adjacency / kNN edges,
   damping 0.85, ``hops`` steps);
2. with ``granularity: session`` each channel's turn scores are pooled per session
   (``session_pool``; BM25 scores the whole session text by default, see ``session_bm25``);
3. each channel's ranking (its top ``channel_depth``) enters reciprocal rank fusion
   (k = ``rrf_k``, per-channel ``weights``);
4. the fused top ``rerank_top_n`` are reranked by a cross-encoder when one is configured by local
   path, otherwise the stage is skipped and ``notes['rerank']`` says so;
5. the top ``top_k`` units are returned with every channel's score, and the context handed to the
   reader is cut to ``token_budget`` tokens (pinned count, pipeline.core.tokens), the cut counted.

Memory is built by ``ingest_session`` in time order; ``restore`` replays persisted turn units.

Design decisions measured on LongMemEval_S (benchmarks/retrieval_lme_s.py; the fusion defaults
are argued in pipeline.memory.hybrid_params):
- the graph score keeps the seeds' own activation (seeds weighted 1/r): a graph that voted only
  for neighbours pushed the first-stage consensus top unit below its neighbours;
- the temporal channel ranks in-window units by recency x content relevance, not recency
  alone: windows hold ~57 % of a LongMemEval_S haystack, and a recency-only vote goes to the
  newest sessions whatever they are about; habitual ("on Fridays") and future ("tonight") phrases
  open no window;
- sessions: max-pooled turn scores for semantic / graph / temporal, BM25 on the whole session
  text (multi-evidence sessions add up their term matches);
- the temporal vote is weighted by how selective its window is (log2 of candidates over
  in-window candidates, capped): "10 days ago" singles out a few sessions and should outvote
  content channels that cannot tell "a kitchen appliance" from the smoker bought that day,
  while "this year" says nothing;
- the content channels get the question without its time expressions ("10 days ago" is the
  temporal channel's business and only adds noise terms to BM25 and the embedding).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.core.records import QuestionRow
from pipeline.core.tokens import count_tokens
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult, RetrievedUnit
from pipeline.memory.channels.entities import extract_entities
from pipeline.memory.channels.fusion import rank_items, ranking_from_array, rrf
from pipeline.memory.channels.graph import spreading_activation
from pipeline.memory.channels.semantic import cosine_scores
from pipeline.memory.channels.temporal import TimeWindow, parse_time_windows, strip_expressions, temporal_scores
from pipeline.memory.context import fit_budget, render, time_sorted
from pipeline.memory.hybrid_index import BuiltIndex, HybridState
from pipeline.memory.hybrid_params import CHANNELS, HybridParams
from pipeline.memory.params import MemoryConfigError, ParamsInput, parse_params
from pipeline.memory.rerank import CrossEncoderReranker
from pipeline.memory.units import KIND_SESSION, KIND_TURN, turn_units
from pipeline.store.corpus import HaystackSession

RERANK_SKIPPED = "skipped: no cross-encoder configured"


@dataclass
class TurnChannel:
    """A channel over turns: reported score, the key it ranks by, and the turns it ranks;
    ``window_share`` (temporal only): the share of the memory's turns inside the time window."""

    scores: np.ndarray
    key: np.ndarray
    mask: np.ndarray
    window_share: float | None = None


@dataclass
class ChannelOutput:
    """One channel's raw scores over the candidates and the ranking it hands to RRF."""

    scores: np.ndarray
    ranking: list[int]
    window_share: float | None = None


class HybridMemory:
    """Semantic + BM25 + graph + temporal retrieval fused by RRF (see module docstring)."""

    params_model = HybridParams
    version = 1
    kind = "hybrid"

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.params = parse_params(self.params_model, params, self.kind)
        self.deps = deps
        if self.params.channels.semantic and deps.encoder is None:
            raise MemoryConfigError("hybrid: the semantic channel is on but no encoder is configured")
        self.state = HybridState(self.params, deps.encoder)
        path = self.params.cross_encoder_path or deps.cross_encoder_path
        self.reranker = None
        if self.params.rerank and path:
            p = self.params
            self.reranker = CrossEncoderReranker(path, p.rerank_max_length, p.rerank_batch_size)

    # ---- memory protocol ------------------------------------------------------------------
    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        units = turn_units(haystack_id, session)
        self.state.add(units)
        return units

    def restore(self, units: list[MemoryUnit]) -> None:
        wrong = [u.unit_id for u in units if u.kind != KIND_TURN]
        if wrong:
            raise ValueError(f"hybrid restore: expected turn units, got other kinds for {wrong[:3]}")
        self.state = HybridState(self.params, self.deps.encoder)
        self.state.add(sorted(units, key=lambda u: u.session_position))

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        started = time.perf_counter()
        notes: dict[str, Any] = {"granularity": self.params.granularity}
        if not self.state.units:
            return _result([], [], {}, self.params, {**notes, "empty_memory": True})
        idx = self.state.index()
        outputs = self._channels(question, idx, notes)
        fused = rrf(
            {c: o.ranking for c, o in outputs.items()},
            k=self.params.rrf_k,
            weights=self._fusion_weights(outputs, notes),
        )
        order = [i for i in rank_items(fused) if fused[i] > 0]
        order, rerank_scores = self._rerank(question.question, order, idx, notes)
        notes["channels"] = {c: len(o.ranking) for c, o in outputs.items()}
        notes["retrieve_s"] = round(time.perf_counter() - started, 4)
        units = [self._unit(i, idx) for i in order[: self.params.top_k]]
        scored = [
            _retrieved(u, rank, i, outputs, fused, rerank_scores)
            for rank, (u, i) in enumerate(zip(units, order, strict=False), start=1)
        ]
        return _result(units, scored, self._positions(), self.params, notes)

    # ---- channels -------------------------------------------------------------------------
    def _channels(self, question: QuestionRow, idx: BuiltIndex, notes: dict) -> dict[str, ChannelOutput]:
        """Turn-level channel scores, then each channel at the retrieval granularity.

        Order matters: temporal (``temporal_order: relevance``) and graph (seeds) both use the
        fusion of the content channels (semantic, bm25) computed first.
        """
        p = self.params
        ref = self._reference_time(question)
        windows = self._windows(question, ref, notes)
        query = strip_expressions(question.question, windows) if p.strip_time_expressions else question.question
        turn = self._content_channels(query, idx)
        content = rrf(
            {c: ranking_from_array(t.key, t.mask, p.channel_depth) for c, t in turn.items()},
            k=p.rrf_k,
            weights=p.weights.as_dict(),
        )
        if p.channels.temporal and windows and ref is not None:  # windows imply a ref (_windows)
            turn["temporal"] = self._temporal(ref, windows, content)
        if p.channels.graph and idx.adjacency is not None:
            rankings = {c: ranking_from_array(t.key, t.mask, p.channel_depth) for c, t in turn.items()}
            seeds = self._graph_seeds(rankings, question.question)
            notes["graph_seeds"] = len(seeds)
            act = spreading_activation(idx.adjacency, seeds, p.damping, p.hops)
            turn["graph"] = TurnChannel(act, act, act > 0)
        return {c: self._level(c, turn[c], idx, query) for c in CHANNELS if c in turn}

    def _content_channels(self, query: str, idx: BuiltIndex) -> dict[str, TurnChannel]:
        p, n = self.params, len(self.state.units)
        turn: dict[str, TurnChannel] = {}
        if p.channels.bm25 and idx.turn_bm25 is not None:
            s = idx.turn_bm25.scores(query)
            turn["bm25"] = TurnChannel(s, s, s > 0)
        if p.channels.semantic and idx.vectors is not None:
            encoder = self.deps.encoder
            if encoder is None:  # __init__ refuses a semantic channel without an encoder
                raise MemoryConfigError("hybrid: the semantic channel is on but no encoder is configured")
            qvec = np.asarray(encoder.encode([query]), dtype=np.float32)[0]
            cos = cosine_scores(qvec, idx.vectors)
            if p.prf_turns > 0:
                cos = self._prf(qvec, cos, turn.get("bm25"), idx.vectors)
            turn["semantic"] = TurnChannel(cos, cos, np.ones(n, dtype=bool))
        return {c: turn[c] for c in CHANNELS if c in turn}

    def _prf(self, qvec: np.ndarray, cos: np.ndarray, bm25: TurnChannel | None, vectors: np.ndarray) -> np.ndarray:
        """Rocchio pseudo-relevance feedback: q' = q + w * mean(top turns' vectors), cosine again.

        Why: multi-session questions ("how many hours did I spend playing games in total") have
        several evidence sessions on one topic; the best first-pass hits pull the query toward that
        topic's wording, which reaches the evidence sessions phrased unlike the question. The
        feedback turns are the top of the first-pass content fusion (semantic + bm25).
        """
        p = self.params
        rankings = {"semantic": ranking_from_array(cos, None, p.channel_depth)}
        if bm25 is not None:
            rankings["bm25"] = ranking_from_array(bm25.key, bm25.mask, p.channel_depth)
        top = rank_items(rrf(rankings, k=p.rrf_k, weights=p.weights.as_dict()))[: p.prf_turns]
        expanded = qvec / max(float(np.linalg.norm(qvec)), 1e-12) + p.prf_weight * vectors[top].mean(axis=0)
        return cosine_scores(expanded, vectors)

    def _windows(self, question: QuestionRow, ref: dt.datetime | None, notes: dict) -> list[TimeWindow]:
        """The question's time windows relative to ``ref`` (its date, or the newest unit); noted."""
        if ref is None:
            notes["temporal"] = "abstained: no question date and no unit timestamps"
            return []
        windows = parse_time_windows(question.question, ref)
        if not windows:
            notes["temporal"] = "abstained: no time expression"
            return []
        notes["temporal"] = [
            {"expression": w.expression, "start": w.start.isoformat(), "end": w.end.isoformat()} for w in windows
        ]
        return windows

    def _reference_time(self, question: QuestionRow) -> dt.datetime | None:
        stamps = [u.timestamp for u in self.state.units if u.timestamp is not None]
        return question.question_date or max(stamps, default=None)

    def _temporal(self, ref: dt.datetime, windows: list[TimeWindow], content: Mapping[int, float]) -> TurnChannel:
        """In-window turns, scored by recency decay; ranked by decay x content relevance (default).

        Why not by decay alone (``temporal_order: recency``): a window often holds most of a
        haystack (LongMemEval_S: 57 % of sessions on average), so a recency-only ranking votes
        for the newest sessions whatever they are about. Ranked by relevance inside the window,
        the channel votes for "relevant AND in the asked time", which is what the question means.
        """
        stamps = [u.timestamp for u in self.state.units]
        p = self.params
        decay, mask = temporal_scores(stamps, windows, ref, p.half_life_days, p.temporal_slack_days)
        share = float(mask.mean())
        if p.temporal_order == "recency" or not content:
            return TurnChannel(decay, decay, mask, share)
        relevance = np.zeros(len(stamps))
        for i, v in content.items():
            relevance[i] = v
        key = decay * relevance
        return TurnChannel(decay, key, mask & (key > 0), share)

    def _graph_seeds(self, turn_rankings: Mapping[str, list[int]], question: str) -> dict[int, float]:
        """Seeds: the top ``graph_seeds`` turns of the other channels' RRF fusion and up to
        ``graph_seeds`` turns naming an entity of the question; the r-th seed of each list gets
        activation 1/r (the max when a turn is in both lists).

        Why 1/r rather than 1.0 each: seeds keep their activation in the graph score, so equal
        seeds would let a well-linked fifth seed outrank the first one. Always chosen among turns
        (also with ``granularity: session``): activation spreads over the turn graph. Query-entity
        seeds let the graph work alone (ablation) and reach a named entity's turns even when the
        other channels rank them low.
        """
        p = self.params
        if p.graph_seed_from == "fusion":
            lists = [rank_items(rrf(turn_rankings, k=p.rrf_k, weights=p.weights.as_dict()))]
        else:
            lists = [list(r) for r in turn_rankings.values()]
        seeds: dict[int, float] = {}
        named = self.state.entity_units(extract_entities(question))
        for ranked in [*lists, named]:
            for r, i in enumerate(ranked[: p.graph_seeds], start=1):
                seeds[i] = max(seeds.get(i, 0.0), 1.0 / r)
        return seeds

    def _fusion_weights(self, outputs: Mapping[str, ChannelOutput], notes: dict) -> dict[str, float]:
        """Configured channel weights; with ``temporal_selectivity`` the temporal weight is scaled
        by the information its window carries, log2(1 / share of the memory's turns in the
        window), capped at ``temporal_selectivity_cap``.

        Why: a window holding half the haystack halves the candidates (1 bit) and should vote
        like any channel; one holding a tenth of it (3.3 bits, e.g. "10 days ago") is far more
        decisive than a content channel that cannot tell generic wording ("a kitchen
        appliance") from the evidence, and a window holding nearly everything says nothing.
        """
        p, weights = self.params, self.params.weights.as_dict()
        temporal = outputs.get("temporal")
        if p.temporal_selectivity and temporal is not None and temporal.window_share is not None:
            bits = float(np.log2(1.0 / temporal.window_share)) if temporal.window_share > 0 else np.inf
            weights["temporal"] *= min(bits, p.temporal_selectivity_cap)
            notes["temporal_weight"] = round(weights["temporal"], 4)
        return weights

    def _level(self, channel: str, t: TurnChannel, idx: BuiltIndex, query: str) -> ChannelOutput:
        """Channel output at the retrieval granularity (turn scores pooled per session if asked)."""
        p = self.params
        if p.granularity == "turn":
            return ChannelOutput(t.scores, ranking_from_array(t.key, t.mask, p.channel_depth), t.window_share)
        if channel == "bm25" and idx.session_bm25 is not None:
            s = idx.session_bm25.scores(query)
            return ChannelOutput(s, ranking_from_array(s, s > 0, p.channel_depth))
        scores, has = _pool(t.scores, t.mask, idx, p.session_pool)
        key, _ = _pool(t.key, t.mask, idx, p.session_pool)
        return ChannelOutput(scores, ranking_from_array(key, has, p.channel_depth), t.window_share)

    # ---- rerank and output ----------------------------------------------------------------
    def _rerank(self, query: str, order: list[int], idx: BuiltIndex, notes: dict) -> tuple[list[int], dict[int, float]]:
        if self.reranker is None:
            notes["rerank"] = "skipped: rerank switched off" if not self.params.rerank else RERANK_SKIPPED
            return order, {}
        head, tail = order[: self.params.rerank_top_n], order[self.params.rerank_top_n :]
        scores = self.reranker.scores(query, [self._unit(i, idx).text for i in head])
        notes["rerank"] = f"cross-encoder {self.reranker.path}: top {len(head)} reranked"
        ranked = [head[j] for j in np.argsort(-scores, kind="stable")]
        return ranked + tail, {i: float(s) for i, s in zip(head, scores, strict=True)}

    def _unit(self, i: int, idx: BuiltIndex) -> MemoryUnit:
        if self.params.granularity == "turn":
            return self.state.units[i]
        ref = idx.sessions[i]
        first = self.state.units[ref.members[0]]
        return MemoryUnit(
            unit_id=ref.session_key,
            haystack_id=first.haystack_id,
            session_key=ref.session_key,
            session_position=ref.position,
            turn_ids=tuple(t for m in ref.members for t in self.state.units[m].turn_ids),
            text=self.state.session_text(i),
            timestamp=first.timestamp,
            role="session",
            kind=KIND_SESSION,
        )

    def _positions(self) -> dict[str, int]:
        return {u.unit_id: i for i, u in enumerate(self.state.units)}


def _pool(scores: np.ndarray, mask: np.ndarray, idx: BuiltIndex, how: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-session max / mean / sum of the turn scores the channel produced (mask)."""
    pooled = np.zeros(len(idx.sessions), dtype=np.float64)
    has = np.zeros(len(idx.sessions), dtype=bool)
    for s, ref in enumerate(idx.sessions):
        members = np.asarray(ref.members)
        vals = scores[members][mask[members]]
        if vals.size:
            has[s] = True
            pooled[s] = vals.max() if how == "max" else vals.mean() if how == "mean" else vals.sum()
    return pooled, has


def _retrieved(
    unit: MemoryUnit,
    rank: int,
    i: int,
    outputs: Mapping[str, ChannelOutput],
    fused: Mapping[int, float],
    rerank: Mapping[int, float],
) -> RetrievedUnit:
    def score(channel: str) -> float | None:
        o = outputs.get(channel)
        return float(o.scores[i]) if o is not None else None

    return RetrievedUnit(
        unit_id=unit.unit_id,
        rank=rank,
        session_key=unit.session_key,
        turn_ids=unit.turn_ids,
        text=unit.text,
        semantic=score("semantic"),
        bm25=score("bm25"),
        graph=score("graph"),
        temporal=score("temporal"),
        fused=float(fused.get(i, 0.0)),
        rerank=rerank.get(i),
    )


def _result(
    units: list[MemoryUnit],
    scored: list[RetrievedUnit],
    positions: dict[str, int],
    p: HybridParams,
    notes: dict[str, Any],
) -> RetrievalResult:
    """Ranked units -> context within the token budget (dropped units counted, never silent)."""
    fitted = fit_budget(units, p.token_budget, p.context_order)
    shown = time_sorted(fitted.units, positions) if p.context_order == "time" else list(fitted.units)
    context = render(shown, p.context_order)
    notes = {**notes, "token_budget": p.token_budget, "truncated_unit": fitted.truncated}

    def at_depth(cutoff: int) -> RetrievalResult:  # the first ``cutoff`` ranked units, rendered the same way
        return _result(units[:cutoff], scored[:cutoff], positions, p, {**notes, "cutoff": cutoff})

    return RetrievalResult(
        units=tuple(scored),
        context=context,
        context_tokens=count_tokens(context),
        trimmed_units=fitted.trimmed_units,
        notes=notes,
        at_depth=at_depth,
    )
