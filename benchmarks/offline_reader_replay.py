"""Replay the answers stage's offline reader on a finished results folder, with a cold span cache.

Why: the answers stage of configs/shared.yaml spent ~45 min in OfflineReader._free_form ->
CachedEncoder.encode. This replays exactly the reader work of a first run: every
ok ``retrievals`` row of the folder, answered by the configured ``offline`` reader, on an embedding
cache that holds only what exists when the answers stage starts in a first run (the unit texts the
embeddings asset embeds and the question texts the retrievals embedded), copied to a temp folder.
It prints wall / CPU time, texts that reached the model, encode calls, and whether every
prediction equals the one stored in the folder's ``answers`` (``--no-compare`` to skip).

    .venv/bin/python benchmarks/offline_reader_replay.py --config /tmp/x/speed_slice.yaml

The results folder comes from the config (e.g. one written by benchmarks/speed_shared.py
``--workdir``). Nothing in it is modified.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assets.embeddings import collect_unit_texts
from pipeline.config.model import load_config
from pipeline.embeddings.cache import EmbeddingCache, embeddings_dir, text_hash
from pipeline.embeddings.encoder import CachedEncoder, encoder_for, store_encoder
from pipeline.embeddings.spec import ENCODE_THREADS
from pipeline.kinds.readers import build_reader
from pipeline.readers.base import ReaderDeps, ReadInput, retrieval_from_row
from pipeline.readers.run import PREFETCH_QUESTIONS, session_dates
from pipeline.store.corpus import Corpus
from pipeline.store.results import ResultStore


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cold_cache(source: EmbeddingCache, texts: list[str], target_root: Path) -> int:
    """Copy the vectors of ``texts`` (those cached in ``source``) into a new cache; returns rows."""
    hashes = [h for h in dict.fromkeys(text_hash(t) for t in texts) if h in source]
    if hashes:
        EmbeddingCache(target_root, source.model).put(hashes, source.get(hashes), retain=False)
    return len(hashes)


class CountingEncoder:
    """The reader's encoder, counting encode calls and texts requested (the ``Encoder`` protocol)."""

    def __init__(self, inner: CachedEncoder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.calls = 0
        self.texts = 0

    def encode(self, texts: Any) -> Any:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.encode(texts)


def sample_rows(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` rows per (dataset, system), seeded (the same pairs for every variant compared)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in sorted(rows, key=lambda r: (r["dataset"], r["unit"], r["partition_key"])):
        groups.setdefault((r["dataset"], r["unit"]), []).append(r)
    out = []
    for key in sorted(groups):
        out += random.Random(0).sample(groups[key], min(n, len(groups[key])))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--reader", default="offline", help="reader name in the config")
    parser.add_argument("--no-compare", action="store_true")
    parser.add_argument("--no-prefetch", action="store_true", help="answer one question at a time")
    parser.add_argument(
        "--sample", type=int, default=None, help="replay N seeded (question, system) pairs per dataset x system"
    )
    parser.add_argument(
        "--encode-threads",
        type=int,
        default=None,
        help="torch threads of the reader's encode calls (default: ENCODE_THREADS)",
    )
    args = parser.parse_args()
    cfg = load_config(args.config)
    store = ResultStore(results_dir=str(cfg.resolved_results_dir()))
    full = store_encoder(cfg.embeddings, store, args.encode_threads or ENCODE_THREADS)
    rows = []
    for path in sorted((store.parquet_root / "retrievals").glob("*.parquet")):
        rows += [r for r in pq.read_table(path).to_pylist() if r["status"] == "ok"]
    if args.sample:
        rows = sample_rows(rows, args.sample)
    corpora = {ds.name: Corpus.load(store, ds.name) for ds in cfg.datasets}
    questions = []
    for corpus in corpora.values():
        keys = corpus.keys()
        questions += [corpus.question(k).question for k in keys]
    stored: dict[tuple[str, str], Any] = {}
    for path in sorted((store.parquet_root / "answers").glob("*.parquet")):
        for r in pq.read_table(path).to_pylist():
            if r["status"] == "ok" and r["reader"] == args.reader:
                stored[(r["partition_key"], r["system"])] = r["prediction"]
    rc = next(r for r in cfg.readers if r.name == args.reader)
    with tempfile.TemporaryDirectory(prefix="membench-replay-") as tmp:
        unit_texts = collect_unit_texts(store, cfg).texts
        copied = cold_cache(full.cache, [*unit_texts, *questions], Path(tmp))
        encoder = CountingEncoder(encoder_for(Path(tmp), cfg.embeddings, args.encode_threads or ENCODE_THREADS))
        reader = build_reader(rc.kind, rc.params, ReaderDeps(encoder=encoder))
        _ = encoder.inner.model  # load before timing
        before = encoder.inner.model.texts_encoded
        wall, cpu = time.perf_counter(), cpu_s()
        same, differ, kinds = 0, [], Counter()
        items = []
        for r in rows:
            corpus = corpora[r["dataset"]]
            retrieval = retrieval_from_row(r)
            dates = session_dates(corpus, [u.session_key for u in retrieval.units])
            items.append(ReadInput(corpus.question(r["partition_key"]), retrieval, dates))
        # as the answers stage does: a chunk of PREFETCH_QUESTIONS questions prefetched, then answered
        chunks: dict[int, list[int]] = {}
        keys = list(dict.fromkeys(r["partition_key"] for r in rows))
        chunk_of = {k: i // PREFETCH_QUESTIONS for i, k in enumerate(keys)}
        for i, r in enumerate(rows):
            chunks.setdefault(chunk_of[r["partition_key"]], []).append(i)
        answers = {}
        for members in chunks.values():
            if not args.no_prefetch and hasattr(reader, "prefetch"):
                reader.prefetch([items[i] for i in members])
            for i in members:
                answers[i] = reader.answer(items[i])
        for i, r in enumerate(rows):
            answer = answers[i]
            kinds[r["dataset"]] += 1
            key = (r["partition_key"], r["unit"])
            if key in stored:
                if stored[key] == answer.prediction:
                    same += 1
                else:
                    differ.append((key, stored[key], answer.prediction))
        wall, cpu = time.perf_counter() - wall, cpu_s() - cpu
        embedded = encoder.inner.model.texts_encoded - before
    print(f"config {args.config}: {len(rows)} (question, system) retrievals answered {dict(kinds)}")
    print(f"cold cache: {copied:,} vectors (unit texts + questions) copied from {embeddings_dir(store.root)}")
    print(f"encode threads {encoder.inner.spec.encode_threads} (bulk threads {encoder.inner.spec.num_threads})")
    print(f"reader wall {wall:.1f} s, CPU {cpu:.1f} s; encode calls {encoder.calls:,}, texts asked {encoder.texts:,}")
    print(f"texts that reached the model: {embedded:,}")
    if not args.no_compare:
        print(f"predictions equal to the stored answers: {same}/{same + len(differ)}")
        for key, old, new in differ[:10]:
            print(f"  DIFFERS {key}: stored {old!r} replay {new!r}")


if __name__ == "__main__":
    main()
