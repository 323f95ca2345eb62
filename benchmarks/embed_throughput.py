"""Embedding throughput on LongMemEval_S unit texts: pipeline path vs raw ``model.encode``.

Why: embedding every unique LongMemEval_S turn (188,998 texts, ~1,000 chars each, a third longer
than MiniLM's 256-token limit) is the single biggest compute cost of an offline run. This measures
texts/s of the pipeline path (encoder_for's CachedEncoder + Parquet cache, cold cache in a
temp dir) and of plain ``SentenceTransformer.encode`` on the SAME random sample of unique texts
with the same backend, their ratio (target >= 0.8: the cache must cost little), and the full-run
estimate. ``--compare-fp32`` also times plain fp32 encode (the naive baseline) and measures how far
the chosen backend's vectors are from fp32 (cosine, top-10 retrieval agreement for real questions).

    .venv/bin/python benchmarks/embed_throughput.py --limit 2000 --compare-fp32

CPU time (all threads and worker processes) is printed next to wall time: on a shared machine wall
time swings with other load, CPU time much less.

``--spans`` embeds the offline reader's sentence spans (~100 chars, ~22 tokens) cut from random
turns instead of whole turns: the answers stage's texts. Threads vs processes, measured on the
shared 2-core box (load 3-7, bf16, batch 64): turns (300, ~970 chars) 2 threads
56-72 texts/s wall vs 1 thread 36-53, so bulk embedding keeps ``num_threads``; spans 1 thread
196-297 texts/s vs 2 threads 65-127, so per-question calls use one (ENCODE_THREADS); two
single-thread processes at once reached 136-162 + 94-108 texts/s, no more than one alone (the
other engineers' jobs hold the second core). Batch 128/256 was slower than 64 for spans.

Full-run estimate (188,998 unique texts of 245,625 turns): measured 33 texts/CPU-s with bf16 and
19 with fp32 (1 thread, random sample of 600), i.e. about 48 min (bf16) vs 83 min (fp32) on two
idle cores; on the shared dev box (load average 4-8) the measured wall-clock estimate was 2.2-4.3 h.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assets.embeddings import ProgressReporter
from pipeline.config.model import EmbeddingConfig
from pipeline.core.records import TurnRow
from pipeline.embeddings.encoder import CachedEncoder, EnsureStats, encoder_for, model_spec
from pipeline.embeddings.model import load_model
from pipeline.embeddings.spec import ModelSpec
from pipeline.memory.base import RetrievedUnit, turn_unit_text
from pipeline.readers.offline import unit_spans

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "longmemeval_s_cleaned_498of500.json.gz"


def load_texts(path: Path) -> tuple[list[str], int, list[str]]:
    """(unique unit texts in first-seen order, total turns, question texts)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        records = json.load(f)
    unique: dict[str, None] = {}
    total = 0
    for rec in records:
        for session in rec["haystack_sessions"]:
            for pos, turn in enumerate(session):
                total += 1
                row = TurnRow("lme_s", "s", f"s:{pos}", pos, turn["role"], turn["role"], turn["content"], False, None)
                unique.setdefault(turn_unit_text(row), None)
    return list(unique), total, [rec["question"] for rec in records]


def span_texts(unit_texts: list[str], questions: list[str]) -> tuple[list[str], list[str]]:
    """The offline reader's span texts (sentences with their speaker) of ``unit_texts``, unique.

    Why: the answers stage embeds these (~22 tokens each), not whole turns (~250 tokens); batch
    size and thread count that suit one do not suit the other (see ENCODE_THREADS).
    """
    units = tuple(RetrievedUnit(f"u{i}", i, "s", (), t) for i, t in enumerate(unit_texts))
    return [s.embed_text for s in unit_spans(units, limit=10**9)], questions


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the ``--workers`` processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextlib.contextmanager
def timer(out: dict[str, float]) -> Iterator[None]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    yield
    out["wall"], out["cpu"] = time.perf_counter() - wall, cpu_seconds() - cpu


def raw_encode(spec: ModelSpec, texts: list[str]) -> np.ndarray:
    """Plain ``SentenceTransformer.encode`` with the spec's backend, no cache, no hashing."""
    import torch

    st = load_model(spec).sentence_transformer
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=spec.backend == "bf16"):
        vecs = st.encode(texts, batch_size=spec.batch_size, normalize_embeddings=True, show_progress_bar=False)
    return np.asarray(vecs, dtype=np.float32)


def top_k_overlap(
    ref: np.ndarray, other: np.ndarray, queries_ref: np.ndarray, queries_other: np.ndarray, k: int
) -> float:
    """Mean |top-k(ref) ∩ top-k(other)| / k over queries (retrieval agreement with the reference)."""
    a = np.argsort(-(queries_ref @ ref.T), axis=1)[:, :k]
    b = np.argsort(-(queries_other @ other.T), axis=1)[:, :k]
    return float(np.mean([len(set(x) & set(y)) / k for x, y in zip(a, b, strict=True)]))


def pipeline_pass(enc: CachedEncoder, texts: list[str]) -> EnsureStats:
    """What the embeddings asset does: ensure every text is cached, with a progress bar."""
    reporter = ProgressReporter(lambda _msg: None, bar=True)
    try:
        return enc.ensure(texts, reporter)
    finally:
        reporter.close()


def rate(n: int, t: dict[str, float]) -> str:
    return f"{n / t['wall']:7.1f} texts/s wall, {n / t['cpu']:7.1f} texts/CPU-s ({t['wall']:.1f} s)"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--limit", type=int, default=2000, help="random sample of N unique texts (0 = all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="auto", choices=["auto", "fp32", "bf16", "int8"])
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--max-seq-length", type=int, default=None)
    p.add_argument("--threads", type=int, default=None, help="torch threads in total (default: all CPUs)")
    p.add_argument("--workers", type=int, default=1, help="embedding processes (threads split between them)")
    p.add_argument("--compare-fp32", action="store_true", help="also time fp32 encode and measure drift")
    p.add_argument(
        "--spans",
        action="store_true",
        help="embed the offline reader's sentence spans of the turns (the answers stage's texts) instead of turns",
    )
    return p.parse_args()


def section(title: str) -> None:
    print(f"\n== {title}")


def run_timed(label: str, fn: Callable[[], object], n: int) -> dict[str, float]:
    t: dict[str, float] = {}
    with timer(t):
        fn()
    print(f"{label:28s} {rate(n, t)}")
    return t


def main() -> None:
    args = parse_args()
    print(f"load average before: {os.getloadavg()}")
    texts, total_turns, questions = load_texts(args.data)
    print(
        f"{args.data.name}: {total_turns:,} turns, {len(texts):,} unique unit texts "
        f"({100 * (1 - len(texts) / total_turns):.1f}% duplicates)"
    )
    if args.spans:
        rng0 = np.random.default_rng(args.seed)
        some = [texts[i] for i in rng0.choice(len(texts), min(len(texts), 4 * (args.limit or 10**9)), replace=False)]
        texts, questions = span_texts(some, questions)
        texts = list(dict.fromkeys(texts))
        print(f"--spans: {len(texts):,} unique reader spans from {len(some):,} random unit texts")
    rng = np.random.default_rng(args.seed)
    n = min(args.limit, len(texts)) if args.limit else len(texts)
    sample = [texts[i] for i in rng.choice(len(texts), n, replace=False)] if n < len(texts) else texts
    print(f"sample {len(sample):,} texts, mean {np.mean([len(t) for t in sample]):.0f} chars")

    settings = EmbeddingConfig(
        backend=args.backend,
        batch_size=args.batch_size,
        max_seq_length=args.max_seq_length,
        num_threads=args.threads,
        workers=args.workers,
    )
    spec = model_spec(settings)
    t_load: dict[str, float] = {}
    with timer(t_load):
        model = load_model(spec)
    print(
        f"model {spec.variant()} (threads {spec.num_threads}, workers {spec.workers}, batch {spec.batch_size}) "
        f"loaded in {t_load['wall']:.1f} s"
    )
    model.encode(sample[:32])  # warm-up (allocator, oneDNN kernels)

    section("same sample, same backend")
    t_raw = run_timed("raw model.encode", lambda: raw_encode(spec, sample), len(sample))
    with tempfile.TemporaryDirectory() as tmp:
        enc = encoder_for(Path(tmp), settings)
        stats_box: list[EnsureStats] = []
        t_pipe = run_timed("pipeline (cold cache)", lambda: stats_box.append(pipeline_pass(enc, sample)), len(sample))
        t_warm = run_timed("pipeline (warm re-run)", lambda: enc.ensure(sample), len(sample))
        stats = stats_box[0]
        vecs = enc.encode(sample)
    ratio = t_raw["wall"] / t_pipe["wall"]
    print(
        f"pipeline / raw = {ratio:.2f} wall, {t_raw['cpu'] / t_pipe['cpu']:.2f} CPU (target >= 0.8); "
        f"warm re-run embedded {enc.ensure(sample).embedded} texts in {t_warm['wall']:.2f} s"
    )
    print(
        f"truncated at {model.max_seq_length} tokens: {stats.truncated:,}/{stats.embedded:,} "
        f"({100 * stats.truncated / max(stats.embedded, 1):.1f}%)"
    )
    per_text = t_pipe["wall"] / len(sample)
    if not args.spans:
        print(f"full run estimate ({len(texts):,} unique texts, this load): {len(texts) * per_text / 3600:.2f} h")

    if args.compare_fp32 and spec.backend != "fp32":
        section("naive fp32 baseline and drift of the chosen backend")
        ref_spec = model_spec(
            EmbeddingConfig(
                backend="fp32", batch_size=args.batch_size, max_seq_length=args.max_seq_length, num_threads=args.threads
            )
        )
        load_model(ref_spec).encode(sample[:32])
        box: list[np.ndarray] = []
        t_ref = run_timed("raw fp32 model.encode", lambda: box.append(raw_encode(ref_spec, sample)), len(sample))
        ref = box[0]
        cos = np.sum(ref * vecs, axis=1)
        qs = [questions[i] for i in rng.choice(len(questions), min(200, len(questions)), replace=False)]
        overlap = top_k_overlap(ref, vecs, raw_encode(ref_spec, qs), model.encode(qs), k=10)
        print(
            f"speed-up over fp32: {t_ref['wall'] / t_pipe['wall']:.2f}x wall, {t_ref['cpu'] / t_pipe['cpu']:.2f}x CPU"
        )
        print(
            f"cosine to fp32: mean {cos.mean():.6f}, min {cos.min():.6f}; top-10 retrieval overlap "
            f"({len(qs)} questions over the sample): {overlap:.3f}"
        )
        print(f"full run estimate fp32: {len(texts) * t_ref['wall'] / len(sample) / 3600:.2f} h")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
