"""Session-level retrieval benchmark of the ``hybrid`` memory on LongMemEval_S.

Why this script: the acceptance of the hybrid memory is "beats BM25-only and semantic-only on
LongMemEval_S session-level recall_any@5 and NDCG_any@10". It follows LongMemEval's own retrieval
protocol (src/retrieval/run_retrieval.py of the LongMemEval repository):

- only user turns are indexed;
- an answer session (id containing ``answer``) whose user turns carry no ``has_answer`` is NOT
  gold (LongMemEval renames it ``noans``); abstention questions (``_abs``) and questions left with
  no gold session are skipped (418 questions of the 498 in the cleaned S file);
- session ranking of a turn-level system = sessions in order of their first retrieved turn;
- recall_any@k / recall_all@k / ndcg_any@k exactly as LongMemEval's ``evaluate_retrieval``
  (binary relevance over haystack positions, DCG = rel_1 + sum_{i>=2} rel_i / log2(i)).

The reference row ``bm25_ref`` is plain bm25s over session documents (user turns joined), k1 1.2,
b 0.75, English stop words, query = question: it validates the protocol against the published
reference (418 questions: recall_any@5 0.943, recall_all@5 0.823, ndcg_any@10 0.874).

Questions come from the pipeline's LongMemEval loader (pipeline.datasets; its abstention rule
from pipeline.core.families), gold sessions from pipeline.metrics.retrieval.lme_gold_sessions and the
metrics from pipeline.metrics.retrieval. Embeddings go through the pipeline's cached encoder
(pipeline.embeddings.encoder over pipeline.embeddings.cache, keyed by model variant + text hash) in
``--cache`` (default: the configs/shared.yaml results, whose lme_s run embeds the same user-turn
texts), so repeated runs only pay for the retrieval itself.
``--limit N`` takes N evenly spaced eligible questions (all types);
``--shift 0.5`` takes the N questions half-way between those (a disjoint held-out sample, to check
that what was tuned on one sample generalizes).

    .venv/bin/python benchmarks/retrieval_lme_s.py --embed-only            # fill the cache
    .venv/bin/python benchmarks/retrieval_lme_s.py --limit 60              # iterate
    .venv/bin/python benchmarks/retrieval_lme_s.py --by-type               # all 418 questions

Measured (all 418 questions, session granularity, default hybrid params, 2-core shared CPU;
``--misses`` lists the hybrid's recall_any@5 misses):

    system               r_any@5 r_all@5 ndcg_any@10
    bm25_ref               0.943   0.823   0.874   (= the published reference: protocol validated)
    bm25_only              0.957   0.859   0.896
    semantic_only          0.962   0.868   0.893
    semantic+bm25          0.983   0.911   0.923
    hybrid                 0.986   0.935   0.940
    hybrid-no-semantic     0.962   0.888   0.907
    hybrid-no-bm25         0.969   0.900   0.912
    hybrid-no-graph        0.988   0.914   0.931
    hybrid-no-temporal     0.981   0.931   0.934

Embedding the 81,889 unique texts (user turns as ``turn_unit_text`` + questions) took ~85 min of
wall time on the shared CPU (fp32 ~12 texts/s, bf16 ~20 texts/s); a cached run takes ~4.5 min
for all nine configurations.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.config.model import EmbeddingConfig
from pipeline.core.records import QuestionRow, SessionWithTurns
from pipeline.datasets.longmemeval import load_longmemeval
from pipeline.embeddings.cache import text_hash
from pipeline.embeddings.encoder import CachedEncoder
from pipeline.embeddings.spec import ModelSpec
from pipeline.memory.base import MemoryDeps, RetrievedUnit, turn_unit_text
from pipeline.metrics.retrieval import (
    PROTOCOL_LONGMEMEVAL,
    exclusion,
    lme_gold_sessions,
    ndcg_any_at_k,
    recall_all_at_k,
    recall_any_at_k,
)
from pipeline.store.corpus import HaystackSession

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared/datasets/longmemeval_s_cleaned_498of500.json.gz"
DEFAULT_CACHE = Path(__file__).resolve().parent.parent / "results/shared/parquet/embeddings"
KS = (1, 3, 5, 10)
NDCG_KS = (5, 10)


# ---------------------------------------------------------------------------------------------
# data (the pipeline's LongMemEval loader; LongMemEval's retrieval protocol on top)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LmeQuestion:
    """One eligible question: its pipeline records, its haystack (user turns) and gold positions."""

    row: QuestionRow
    haystack: list[HaystackSession]
    gold: frozenset[int]  # haystack positions of the gold sessions (pipeline.metrics.retrieval.lme_gold_sessions)


def _user_session(qid: str, pos: int, sid: str, sw: SessionWithTurns) -> HaystackSession:
    """The session at ``pos`` with its user turns only, under a key naming the position.

    Why a key per position: the benchmark scores haystack positions (LongMemEval's corpus), and
    the canonical session key is a content hash that two positions could share.
    """
    key = f"{qid}:{pos}:{sid}"
    user = [t for t in sw.turns if t.role == "user"]
    turns = tuple(replace(t, session_key=key, turn_id=f"{key}:{i}", position=i) for i, t in enumerate(user))
    return HaystackSession(pos, replace(sw.session, session_key=key, n_turns=len(turns)), turns)


def load_questions(path: Path, limit: int | None, shift: float = 0.0) -> list[LmeQuestion]:
    out: list[LmeQuestion] = []
    for rec in load_longmemeval(path, "lme_s"):
        q = rec.question
        if q is None:  # a record the loader could not read (none in the cleaned S file)
            continue
        by_key = {s.session.session_key: s for s in rec.sessions}
        turns = {k: s.turns for k, s in by_key.items()}
        gold_keys = lme_gold_sessions(rec.evidence, turns)
        # abstention (pipeline.core.families rule) or no gold session: not scored, as LongMemEval
        if exclusion(PROTOCOL_LONGMEMEVAL, q.question_id, gold_keys) is not None:
            continue
        hay = [
            _user_session(q.question_id, h.position, h.source_session_id, by_key[h.session_key]) for h in rec.haystack
        ]
        gold = frozenset(h.position for h in rec.haystack if h.session_key in gold_keys)
        out.append(LmeQuestion(q, hay, gold))
    if limit is not None and limit < len(out):
        step = len(out) / limit
        out = [out[int((i + shift) * step)] for i in range(limit)]
    return out


# ---------------------------------------------------------------------------------------------
# embeddings (the pipeline's cached encoder: pipeline.embeddings.cache shards, keyed by variant + text hash)
# ---------------------------------------------------------------------------------------------
def make_encoder(cache_root: Path, backend: str) -> CachedEncoder:
    """The pipeline's encoder (pipeline.embeddings.encoder) over the cache at ``cache_root``.

    The default ``--cache`` is the shared.yaml results' embeddings folder: user turns are embedded as
    the pipeline embeds them (``turn_unit_text``), so vectors the pipeline computed are reused.
    """
    return CachedEncoder(ModelSpec.from_config(EmbeddingConfig(backend=backend)), cache_root)


def missing(enc: CachedEncoder, texts: Sequence[str]) -> list[str]:
    """Texts whose vector is not cached yet (unique)."""
    absent = set(enc.cache.missing([text_hash(t) for t in texts]))
    return sorted({t for t in texts if text_hash(t) in absent}, key=len)


def texts_to_embed(questions: Sequence[LmeQuestion]) -> list[str]:
    texts = [q.row.question for q in questions]
    for q in questions:
        texts.extend(turn_unit_text(t) for hs in q.haystack for t in hs.turns)
    return texts


# ---------------------------------------------------------------------------------------------
# metrics (pipeline.metrics.retrieval: LongMemEval's evaluate_retrieval, session level)
# ---------------------------------------------------------------------------------------------
def session_metrics(ranking: Sequence[int], q: LmeQuestion) -> dict[str, float]:
    """recall_any/all@k and ndcg_any@k of a ranking of haystack positions (best first).

    As LongMemEval ranks the whole corpus, positions the system did not rank follow in haystack
    order; labels are the positions, gold the gold sessions' positions.
    """
    seen = set(ranking)
    full = [str(p) for p in [*ranking, *(p for p in range(len(q.haystack)) if p not in seen)]]
    gold = {str(p) for p in q.gold}
    out: dict[str, float] = {}
    for k in KS:
        out[f"recall_any@{k}"] = recall_any_at_k(full, gold, k)
        out[f"recall_all@{k}"] = recall_all_at_k(full, gold, k)
    for k in NDCG_KS:
        out[f"ndcg_any@{k}"] = ndcg_any_at_k(full, gold, k)
    return out


def _positions(units: Sequence[RetrievedUnit]) -> list[int]:
    """Session positions in order of first appearance (LongMemEval's turn -> session mapping)."""
    out: list[int] = []
    for u in units:
        pos = int(u.session_key.split(":")[1])
        if pos not in out:
            out.append(pos)
    return out


# ---------------------------------------------------------------------------------------------
# systems
# ---------------------------------------------------------------------------------------------
OFF = {"semantic": False, "bm25": False, "graph": False, "temporal": False}


def configs(granularity: str, extra: dict) -> dict[str, dict | None]:
    """Name -> hybrid params (None = the plain bm25s reference of the LongMemEval protocol)."""
    base = {"granularity": granularity, "top_k": 50 if granularity == "session" else 300, "token_budget": None}
    base = _merge(base, extra)
    only = {c: _merge(base, {"channels": {**OFF, c: True}}) for c in ("bm25", "semantic")}
    out: dict[str, dict | None] = {"bm25_ref": None, "bm25_only": only["bm25"], "semantic_only": only["semantic"]}
    out["semantic+bm25"] = _merge(base, {"channels": {"graph": False, "temporal": False}})
    out["hybrid"] = base
    for c in ("semantic", "bm25", "graph", "temporal"):
        out[f"hybrid-no-{c}"] = _merge(base, {"channels": {c: False}})
    return out


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out.get(k, {}), v) if isinstance(v, dict) else v
    return out


def bm25_reference(q: LmeQuestion) -> list[int]:
    from pipeline.memory.channels.lexical import BM25Index

    docs = [" ".join(t.text for t in hs.turns) for hs in q.haystack]
    scores = BM25Index(docs, stem=False).scores(q.row.question)
    return np.argsort(-scores, kind="stable").tolist()


def run_hybrid(q: LmeQuestion, params: dict, deps: MemoryDeps) -> list[int]:
    from pipeline.memory.hybrid import HybridMemory

    mem = HybridMemory(params, deps)
    for hs in q.haystack:
        mem.ingest_session(q.row.haystack_id, hs)
    return _positions(mem.retrieve(q.row).units)


def evaluate(
    questions: Sequence[LmeQuestion], params: dict | None, deps: MemoryDeps, misses: bool = False
) -> tuple[dict, list]:
    rows = []
    t0 = time.perf_counter()
    for q in questions:
        ranking = bm25_reference(q) if params is None else run_hybrid(q, params, deps)
        rows.append((q.row.type_name, session_metrics(ranking, q)))
        if misses and not rows[-1][1]["recall_any@5"]:
            print_miss(q, ranking)
    mean = {m: float(np.mean([r[m] for _, r in rows])) for m in rows[0][1]}
    mean["wall_s"] = time.perf_counter() - t0
    return mean, rows


def print_miss(q: LmeQuestion, ranking: Sequence[int]) -> None:
    """One recall_any@5 miss: the question, its date, and where the gold sessions ranked."""
    gold = sorted(q.gold)
    ranks = {p: (ranking.index(p) + 1 if p in ranking else None) for p in gold}
    dates = {p: q.haystack[p].session.datetime_raw for p in gold}
    print(f"MISS {q.row.question_id} [{q.row.type_name}] {q.row.question!r} asked {q.row.question_date}")
    print(f"     gold rank {ranks} dates {dates}")


def print_table(results: dict[str, dict], n: int) -> None:
    cols = [f"recall_any@{k}" for k in KS] + [f"recall_all@{k}" for k in KS] + [f"ndcg_any@{k}" for k in NDCG_KS]
    short = [c.replace("recall_", "r_").replace("ndcg_any", "ndcg") for c in cols]
    print(f"\nsession-level retrieval, LongMemEval_S, N={n} questions")
    print(f"{'system':<20}" + "".join(f"{c:>9}" for c in short) + f"{'wall_s':>9}")
    for name, m in results.items():
        print(f"{name:<20}" + "".join(f"{m[c]:>9.3f}" for c in cols) + f"{m['wall_s']:>9.1f}")


def print_by_type(name: str, rows: list) -> None:
    types = sorted({t for t, _ in rows})
    print(f"\n{name} by question type (recall_any@5 / recall_all@5 / ndcg_any@10, n)")
    for t in types:
        rs = [r for tt, r in rows if tt == t]
        ra, rl, nd = (np.mean([r[m] for r in rs]) for m in ("recall_any@5", "recall_all@5", "ndcg_any@10"))
        print(f"  {t:<28}{ra:>7.3f}{rl:>7.3f}{nd:>7.3f}{len(rs):>5}")


def main(args: argparse.Namespace) -> None:
    qs = load_questions(args.data, args.limit, args.shift)
    enc = make_encoder(args.cache, args.backend)
    if args.cached_only:
        qs = [q for q in qs if not missing(enc, texts_to_embed([q]))]
    todo = missing(enc, texts_to_embed(qs))
    if todo:
        print(f"embedding {len(todo)} uncached texts first", file=sys.stderr, flush=True)
        enc.ensure(todo)
    deps = MemoryDeps(encoder=enc)
    extra = json.loads(args.set) if args.set else {}
    all_configs = configs(args.granularity, extra)
    names = args.systems.split(",") if args.systems else list(all_configs)
    results: dict[str, dict] = {}
    for name in names:
        mean, rows = evaluate(qs, all_configs[name], deps, misses=args.misses and name == "hybrid")
        results[name] = mean
        if args.by_type and name in ("hybrid", "bm25_only", "semantic_only"):
            print_by_type(name, rows)
        print(f"  done {name} ({mean['wall_s']:.1f}s)", file=sys.stderr, flush=True)
    print(f"\ngranularity={args.granularity} overrides={extra}")
    print_table(results, len(qs))


def main_embed(args: argparse.Namespace) -> None:
    """Fill the cache question by question in a seeded shuffled order: any prefix of the work is
    a sample over all question types, usable at once with ``--cached-only``."""
    qs = load_questions(args.data, args.limit, args.shift)
    random.Random(0).shuffle(qs)
    enc = make_encoder(args.cache, args.backend)
    todo = missing(enc, texts_to_embed(qs))
    print(f"{len(qs)} questions, {len(todo)} texts to embed", flush=True)
    t0 = time.time()
    encoded = 0
    for n, q in enumerate(tqdm(qs, desc="questions", file=sys.stderr), start=1):
        encoded += enc.ensure(texts_to_embed([q])).embedded
        if n % 20 == 0:
            print(f"{n} questions done, {encoded} texts embedded in {time.time() - t0:.0f}s", flush=True)
    print(f"embedded {encoded} texts in {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embeddings folder (pipeline cache layout)")
    ap.add_argument("--backend", default="bf16", choices=("auto", "fp32", "bf16", "int8"), help="embedding backend")
    ap.add_argument("--limit", type=int, default=None, help="N evenly spaced eligible questions")
    ap.add_argument("--shift", type=float, default=0.0, help="offset in [0, 1) of the evenly spaced sample")
    ap.add_argument("--granularity", choices=("turn", "session"), default="session")
    ap.add_argument("--systems", default=None, help="comma-separated subset of the configurations")
    ap.add_argument("--set", default=None, help="JSON params merged into every hybrid config, e.g. '{\"hops\": 3}'")
    ap.add_argument("--by-type", action="store_true", help="per question type breakdown")
    ap.add_argument("--misses", action="store_true", help="print the hybrid's recall_any@5 misses")
    ap.add_argument("--cached-only", action="store_true", help="only questions whose texts are all cached")
    ap.add_argument("--embed-only", action="store_true", help="fill the embedding cache and stop")
    a = ap.parse_args()
    main_embed(a) if a.embed_only else main(a)
