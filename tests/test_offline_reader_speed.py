"""The offline reader's span vectors (issue 14 item 1): same predictions on the fast path, spans
embedded once by content across systems and questions, no worker pool for per-question calls.

The fast path is ``encode_threads=1`` for the reader's span calls (marked
``pipeline.embedding_cache.short_text_calls()``; resources/embeddings.py ENCODE_THREADS); before
it, they ran with ``num_threads`` (all CPUs), as every other encode call still does. bf16 vectors
move by ~1e-4 in cosine between thread counts, so the test checks that the predictions, not the
vectors, are unchanged, on every question of the bundled samples with its whole haystack as context.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import resources.embeddings as embeddings_mod
from pipeline.embedding_cache import short_text_calls
from pipeline.memory.base import RetrievalResult, RetrievedUnit
from pipeline.readers.base import ReaderDeps, ReadInput, build_reader
from pipeline.readers.offline import unit_spans
from pipeline.records import QuestionRow
from resources.embeddings import CachedEncoder, EmbeddingResource

SAMPLES = Path(__file__).resolve().parent.parent / "pipeline" / "sample_data"


def _question(dataset: str, qid: str, text: str) -> QuestionRow:
    return QuestionRow(dataset, qid, f"{dataset}__{qid}", 0, "t", "t", text, None, None, None, None, None, None,
                       False, "h")  # fmt: skip


def _units(sessions: list[tuple[str, list[str]]]) -> tuple[RetrievedUnit, ...]:
    """One unit per session, ``speaker: text`` lines (what full_context hands the reader)."""
    return tuple(
        RetrievedUnit(key, rank, key, (), "\n".join(lines)) for rank, (key, lines) in enumerate(sessions, start=1)
    )


def sample_inputs() -> list[ReadInput]:
    """Every free-form question of the bundled LongMemEval and LoCoMo samples, haystack as context."""
    inputs = []
    for name in ("longmemeval_s_sample.json", "longmemeval_oracle_sample.json"):
        for rec in json.loads((SAMPLES / name).read_text()):
            sessions = [
                (f"{rec['question_id']}:{sid}", [f"{t['role']}: {t['content']}" for t in turns])
                for sid, turns in zip(rec["haystack_session_ids"], rec["haystack_sessions"], strict=True)
            ]
            retrieval = RetrievalResult(_units(sessions), "", 0)
            inputs.append(ReadInput(_question(name, rec["question_id"], rec["question"]), retrieval))
    for conv in json.loads((SAMPLES / "locomo_sample.json").read_text()):
        c = conv["conversation"]
        sessions = [
            (f"{conv['sample_id']}:{k}", [f"{t['speaker']}: {t['text']}" for t in c[k]])
            for k in sorted((k for k in c if k.startswith("session_") and isinstance(c[k], list)), reverse=True)
        ]
        retrieval = RetrievalResult(_units(sessions), "", 0)
        for i, qa in enumerate(conv["qa"]):
            inputs.append(ReadInput(_question("locomo", f"{conv['sample_id']}_q{i}", qa["question"]), retrieval))
    return inputs


def predictions(encoder: CachedEncoder, inputs: list[ReadInput]) -> list[str | None]:
    reader = build_reader("offline", {}, ReaderDeps(encoder=encoder))
    return [reader.answer(item).prediction for item in inputs]


@pytest.fixture(scope="module")
def inputs() -> list[ReadInput]:
    return sample_inputs()


def test_predictions_unchanged_by_the_single_thread_encode_path(
    inputs: list[ReadInput], tmp_path_factory: pytest.TempPathFactory
) -> None:
    before = EmbeddingResource(num_threads=2, encode_threads=2).encoder(tmp_path_factory.mktemp("before"))
    after = EmbeddingResource(num_threads=2).encoder(tmp_path_factory.mktemp("after"))
    assert after.spec.encode_threads == 1
    old, new = predictions(before, inputs), predictions(after, inputs)
    assert new == old
    answered = [p for p in new if p != "No information available."]
    assert len(inputs) >= 30 and len(answered) >= len(inputs) // 2  # real answers, not all abstentions


def test_span_vectors_are_embedded_once_across_systems_and_questions(inputs: list[ReadInput], tmp_path: Path) -> None:
    encoder = EmbeddingResource().encoder(tmp_path)
    reader = build_reader("offline", {}, ReaderDeps(encoder=encoder))
    model = encoder.model
    first = inputs[0]
    start = model.texts_encoded
    reader.answer(first)
    spans = {s.embed_text for s in unit_spans(first.retrieval.units, 400)}
    assert model.texts_encoded - start == len(spans | {first.question.question})
    # another "system" retrieving a subset of the same units, and another question on them: no span re-embedded
    subset = RetrievalResult(first.retrieval.units[::-1][:2], "", 0)
    other_q = _question("x", "other", "Which city did the user move to?")
    start = model.texts_encoded
    reader.answer(ReadInput(first.question, subset))
    reader.answer(ReadInput(other_q, first.retrieval))
    assert model.texts_encoded - start == 1  # only the new question text
    # a new reader on the same cache folder (a rerun) embeds nothing
    rerun = build_reader("offline", {}, ReaderDeps(encoder=EmbeddingResource().encoder(tmp_path)))
    start = model.texts_encoded
    rerun.answer(first)
    assert model.texts_encoded - start == 0


def test_per_question_encode_never_starts_a_worker_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``workers: 2`` a 300-text encode used to cut itself into chunks and spawn two model
    processes (~7 s of model load each) for every call; per-question calls now stay in-process."""

    def no_pool(*_args: object, **_kw: object) -> None:
        raise AssertionError("per-question encode started a process pool")

    monkeypatch.setattr(embeddings_mod, "ProcessPoolExecutor", no_pool)
    encoder = EmbeddingResource(workers=2).encoder(tmp_path)
    texts = [f"sentence number {i} about the user's trip" for i in range(300)]
    vecs = encoder.encode(texts)
    assert vecs.shape == (300, encoder.dim)
    assert len(encoder.cache) == 300


def test_only_marked_calls_use_encode_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Query and bulk calls keep ``num_threads`` (their vectors, hence retrievals, as before)."""
    encoder = EmbeddingResource(num_threads=2, encode_threads=1).encoder(tmp_path)
    model = encoder.model
    seen: list[int | None] = []
    real = model.encode

    def spy(texts: list[str], threads: int | None = None) -> object:
        seen.append(threads)
        return real(texts, threads)

    monkeypatch.setattr(model, "encode", spy)
    encoder.encode(["Where did the user go hiking last spring?"])  # a query, as retrieval embeds it
    with short_text_calls():
        encoder.encode(["user: We went to Yosemite.", "It rained the whole weekend."])
    encoder.ensure(["user: a whole turn, embedded in bulk by the embeddings asset"])
    assert seen == [None, 1, None]  # None = the spec's num_threads (2)
