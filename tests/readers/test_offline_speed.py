"""The offline reader's span vectors (issue 14 item 1): same predictions on the fast path, spans
embedded once by content across systems and questions, no worker pool for per-question calls.

The fast path is ``encode_threads=1`` for the reader's span calls (marked
``pipeline.embeddings.cache.short_text_calls()``; pipeline/embeddings/spec.py ENCODE_THREADS); before
it, they ran with ``num_threads`` (all CPUs), as every other encode call still does. bf16 vectors
move by ~1e-4 in cosine between thread counts, so the test checks that the predictions, not the
vectors, are unchanged, on every question of the bundled samples with its whole haystack as context.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pipeline.embeddings.model as embeddings_mod
from pipeline.config.model import EmbeddingConfig
from pipeline.core.records import QuestionRow
from pipeline.embeddings.cache import lane_calls, short_text_calls
from pipeline.embeddings.encoder import CachedEncoder, encoder_for
from pipeline.kinds.readers import build_reader
from pipeline.memory.base import RetrievalResult, RetrievedUnit
from pipeline.readers.base import ReaderDeps, ReadInput
from pipeline.readers.offline import split_turns, unit_pieces, unit_spans
from tests.support.paths import PROJECT_ROOT

SAMPLES = PROJECT_ROOT / "pipeline" / "sample_data"


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
    before = encoder_for(tmp_path_factory.mktemp("before"), EmbeddingConfig(num_threads=2), encode_threads=2)
    after = encoder_for(tmp_path_factory.mktemp("after"), EmbeddingConfig(num_threads=2))
    assert after.spec.encode_threads == 1
    old, new = predictions(before, inputs), predictions(after, inputs)
    assert new == old
    answered = [p for p in new if p != "No information available."]
    assert len(inputs) >= 30 and len(answered) >= len(inputs) // 2  # real answers, not all abstentions


def test_span_vectors_are_embedded_once_across_systems_and_questions(inputs: list[ReadInput], tmp_path: Path) -> None:
    encoder = encoder_for(tmp_path)
    reader = build_reader("offline", {}, ReaderDeps(encoder=encoder))
    model = encoder.model
    first = inputs[0]
    start = model.texts_encoded
    reader.answer(first)
    turns = {p.text for p in unit_pieces(first.retrieval.units)}  # not pre-embedded in this test
    shortlist = reader._shortlist(first.question.question, first.retrieval.units)  # cached now
    spans = {s.embed_text for s in unit_spans(shortlist, 400)}
    assert len(shortlist) == 5 < len(turns)
    assert model.texts_encoded - start == len(spans | turns | {first.question.question})
    # another "system" retrieving a subset of the same units, and another question on them: what
    # reaches the model is exactly what no earlier call embedded (no text twice)
    subset = RetrievalResult(first.retrieval.units[::-1][:2], "", 0)
    other_q = _question("x", "other", "Which city did the user move to?")
    known = spans | turns | {first.question.question}
    for item in (ReadInput(first.question, subset), ReadInput(other_q, first.retrieval)):
        start = model.texts_encoded
        reader.answer(item)
        used = reader._shortlist(item.question.question, item.retrieval.units)
        wanted = {s.embed_text for s in unit_spans(used, 400)} | {item.question.question}
        assert model.texts_encoded - start == len(wanted - known)
        known |= wanted
    # a new reader on the same cache folder (a rerun) embeds nothing
    rerun = build_reader("offline", {}, ReaderDeps(encoder=encoder_for(tmp_path)))
    start = model.texts_encoded
    rerun.answer(first)
    assert model.texts_encoded - start == 0


def test_per_question_encode_never_starts_a_worker_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``workers: 2`` a 300-text encode used to cut itself into chunks and spawn two model
    processes (~7 s of model load each) for every call; per-question calls now stay in-process."""

    def no_pool(*_args: object, **_kw: object) -> None:
        raise AssertionError("per-question encode started a process pool")

    monkeypatch.setattr(embeddings_mod, "ProcessPoolExecutor", no_pool)
    encoder = encoder_for(tmp_path, EmbeddingConfig(workers=2))
    texts = [f"sentence number {i} about the user's trip" for i in range(300)]
    vecs = encoder.encode(texts)
    assert vecs.shape == (300, encoder.dim)
    assert len(encoder.cache) == 300


def test_only_marked_calls_use_encode_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Query and bulk calls keep ``num_threads`` (their vectors, hence retrievals, as before)."""
    encoder = encoder_for(tmp_path, EmbeddingConfig(num_threads=2), encode_threads=1)
    model = encoder.model
    seen: list[tuple[int | None, int]] = []
    real = model.encode

    def spy(texts: list[str], threads: int | None = None, lanes: int = 1) -> object:
        seen.append((threads, lanes))
        return real(texts, threads, lanes)

    monkeypatch.setattr(model, "encode", spy)
    encoder.encode(["Where did the user go hiking last spring?"])  # a query, as retrieval embeds it
    with short_text_calls():
        encoder.encode(["user: We went to Yosemite.", "It rained the whole weekend."])
    encoder.ensure(["user: a whole turn, embedded in bulk by the embeddings asset"])
    with lane_calls():
        encoder.encode(["user: We drove back on Sunday.", "The car broke down twice."])
    # None = the spec's num_threads (2); lanes only inside lane_calls (a prefetch chunk)
    assert seen == [(None, 1), (1, 1), (None, 1), (None, 2)]


def test_turns_split_back_into_the_texts_the_embeddings_asset_embedded() -> None:
    turns = ["Caroline: I moved.\nIt was in May.", "Melanie: Nice!", "Caroline: Note: see below"]
    unit = "\n".join(turns)
    assert split_turns(unit, frozenset({"Caroline", "Melanie"})) == turns
    assert split_turns("A summary.\nSecond line.", frozenset({"Caroline"})) == ["A summary.\nSecond line."]
    units = (RetrievedUnit("s1", 2, "s1", (), "user: b\nuser: a"), RetrievedUnit("s2", 1, "s2", (), "user: a"))
    assert [(p.text, p.session_key) for p in unit_pieces(units)] == [("user: a", "s2"), ("user: b", "s1")]


def test_shortlist_reads_turn_vectors_from_the_cache(inputs: list[ReadInput], tmp_path: Path) -> None:
    """With the turn texts and the question cached (embeddings asset, retrieval), only the
    sentences of the ``shortlist_turns`` closest turns reach the model."""
    encoder = encoder_for(tmp_path)
    item = inputs[0]
    turns = [p.text for p in unit_pieces(item.retrieval.units)]
    encoder.encode([item.question.question, *turns])
    reader = build_reader("offline", {"shortlist_turns": 3}, ReaderDeps(encoder=encoder))
    start = encoder.model.texts_encoded
    reader.answer(item)
    shortlist = reader._shortlist(item.question.question, item.retrieval.units)
    vecs = encoder.encode([item.question.question, *turns])
    sims = vecs[1:] @ vecs[0]
    assert [p.text for p in shortlist] == [t for t in turns if float(sims[turns.index(t)]) >= sorted(sims)[-3]]
    new_spans = {s.embed_text for s in unit_spans(shortlist, 400)} - set(turns)
    assert encoder.model.texts_encoded - start == len(new_spans) > 0


def test_shortlist_off_scores_every_sentence(inputs: list[ReadInput], tmp_path: Path) -> None:
    """``shortlist_turns: null`` is the exact reader: the best of all sentences, whatever the turn."""
    encoder = encoder_for(tmp_path)
    reader = build_reader("offline", {"shortlist_turns": None}, ReaderDeps(encoder=encoder))
    for item in inputs[:6]:
        spans = unit_spans(item.retrieval.units, 400)
        vecs = encoder.encode([item.question.question, *(s.embed_text for s in spans)])
        best = max(float(v) for v in vecs[1:] @ vecs[0])
        answer = reader.answer(item).prediction
        assert answer == "No information available." or best >= 0.30
        assert answer in {s.text for s in spans} | {"No information available."} or "(" in (answer or "")


def test_prefetch_embeds_a_chunk_in_one_call_with_the_same_answers(inputs: list[ReadInput], tmp_path: Path) -> None:
    """After ``prefetch`` the answers reach the model no more; they equal the per-question ones."""
    chunk = inputs[:8]
    plain = build_reader("offline", {}, ReaderDeps(encoder=encoder_for(tmp_path / "plain")))
    expected = [plain.answer(item).prediction for item in chunk]
    encoder = encoder_for(tmp_path / "batched")
    reader = build_reader("offline", {}, ReaderDeps(encoder=encoder))
    model = encoder.model
    calls: list[tuple[int, int]] = []
    real = model.encode

    def counting(texts: Any, threads: int | None = None, lanes: int = 1) -> Any:
        calls.append((len(texts), lanes))
        return real(texts, threads, lanes)

    model.encode = counting  # type: ignore[method-assign]
    reader.prefetch(chunk)
    before = len(calls)
    assert [reader.answer(item).prediction for item in chunk] == expected
    assert len(calls) == before  # every sentence was embedded by the prefetch
    assert calls[-1][0] > 50  # the new sentences of 8 questions (89 here) in one call
    assert calls[-1][1] == encoder.spec.num_threads  # ... split into lanes (lane_calls)


class CountingEncoder:
    """An ``Encoder`` that records every text asked of it (cache lookups, not model calls)."""

    def __init__(self, inner: CachedEncoder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dim = inner.dim
        self.requested: list[str] = []

    def encode(self, texts: list[str]) -> Any:
        self.requested += texts
        return self.inner.encode(texts)


def test_units_shared_by_questions_are_split_and_looked_up_once(inputs: list[ReadInput], tmp_path: Path) -> None:
    """A LoCoMo conversation's sessions come back for each of its questions (full_context): in a
    prefetched chunk each session's turns are asked of the cache once, and the shortlists equal
    those of readers that answer each question alone."""
    locomo = [i for i in inputs if i.question.dataset == "locomo"]
    same = [i for i in locomo if i.retrieval.units == locomo[0].retrieval.units][:6]
    assert len(same) == 6
    counting = CountingEncoder(encoder_for(tmp_path))
    reader = build_reader("offline", {}, ReaderDeps(encoder=counting))
    reader.prefetch(same)
    pieces = unit_pieces(same[0].retrieval.units)
    # turns of several sentences: never asked as a span too (a one-sentence turn may be)
    turns = {p.text for p in pieces if len(unit_spans([p], 400)) > 1}
    asked = [t for t in counting.requested if t in turns]
    assert len(turns) > 5 and sorted(asked) == sorted(turns)  # every turn once, for six questions
    answers = [reader.answer(i).prediction for i in same]
    for item, answer in zip(same, answers, strict=True):
        alone = build_reader("offline", {}, ReaderDeps(encoder=counting.inner))
        assert alone.answer(item).prediction == answer
