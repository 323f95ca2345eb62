"""``offline``: a deterministic, API-free reader built on the embedding model (the default reader).

Why it exists: the whole pipeline must produce answers and scores without an LLM endpoint (CI,
laptops, a first look at retrieval quality). Every answer it writes is labelled ``offline``.

Multiple choice: each option is scored as ``max_j cos(enc(question + " " + option), enc(unit_j))``
over the retrieved units (a cross-encoder's score of the same pairs when ``cross_encoder_path``
is set); the argmax wins, ties going to the lowest index. With nothing retrieved the options
are scored against the question itself (still deterministic; ``context_tokens`` = 0 shows it).

Free form, in two steps (one step made the answers stage 55 % of a full run, embedding ~200k
context sentences one question at a time):
1. Turn shortlist from vectors the pipeline already has. The retrieved units are split into turns
   (a new turn starts at a line ``<speaker>: ...`` whose speaker starts one of the units; a unit
   with no such line, e.g. a session summary, is one piece). Each piece is the text the
   embeddings asset embedded, so its vector, and the question's (embedded at retrieval), come
   from the cache. The ``shortlist_turns`` pieces most similar to the question are kept (ranked by
   cosine rounded to 3 decimals, then retrieval order); ``shortlist_turns: null`` keeps them all
   (the exact, slow reader of before).
2. Span choice. The kept pieces are split into lines and sentences ("spans", in retrieval order);
   the answer is the span most similar to the question, ranked by ``(cosine rounded to 3 decimals,
   number of shared question keywords, retrieval order)``, i.e. lexical overlap breaks near-ties.
   A span is embedded with its speaker ("Caroline: ...") but returned without it. For "when ..."
   questions the date of the span's session is appended in parentheses, since the answer to those
   is a date. When the best cosine is below ``abstain_below`` (default 0.30; MiniLM cosines of a
   question and an unrelated sentence are mostly below that) or nothing was retrieved, the reader
   abstains with the same sentence the LLM reader is told to use ("No information available.").

What the shortlist costs in quality, measured on the whole of configs/shared.yaml (2,984
questions x 4-5 systems, same retrievals, judged by the default judges; exact reader -> shortlist
of 5): LongMemEval_S contains 0.147-0.169 -> 0.150-0.160 (full_context +0.002, hybrid -0.009,
rag -0.004), oracle 0.179 -> 0.170, LoCoMo token F1 per system -0.008 to +0.005 (full_context
0.039 -> 0.044, hybrid 0.066 -> 0.059), keyword overlap -0.020 to +0.010. Embedding work: ~203k
sentences -> 19,785 (benchmarks/offline_reader_replay.py on the same retrievals, cold span
cache). A study of the reader itself, not of memory systems, should set ``shortlist_turns: null``.

Cost of step 2: span vectors come from the run's embedding cache, keyed by (model variant,
sha256 of the text) like every other vector, so a span is embedded once per results folder,
whichever system, question or rerun meets it again; a span that is a whole turn reuses the
embeddings asset's vector. The answers stage first hands the reader a chunk of questions
(``prefetch``; run.py PREFETCH_QUESTIONS), whose new sentences are embedded in one call (on the
replay: 2,811 model calls of ~7 texts, 120.4 s -> 95 calls of a 32-question chunk, 46.0 s),
split into parallel lanes of one torch thread each (``lane_calls``: 6,000 sentences in calls of
1,000: 6.1 s on two threads -> 5.0 s in two lanes; in calls of 200: 6.8 -> 6.2 s); a question answered
without it embeds its own sentences in a call marked ``short_text_calls()``, on one torch thread
(pipeline/embeddings/spec.py ENCODE_THREADS: 2.2-3.2x less CPU than two threads for such small
calls in three A/B replays on the shared box). Query and turn vectors keep the encoder's thread count: a
different thread count moves bf16 vectors by ~1e-4 in cosine, which moved the retrievals'
semantic scores and flipped one near-tie answer of 1,070 when queries also ran on one thread.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import Field

from pipeline.config.model import BenchmarkConfig
from pipeline.embeddings.cache import lane_calls, short_text_calls
from pipeline.embeddings.spec import hub_offline
from pipeline.memory.base import Encoder, RetrievedUnit
from pipeline.metrics.lexical import keywords
from pipeline.readers.base import (
    LABEL_OFFLINE,
    Answer,
    ReaderConfigError,
    ReaderDeps,
    ReaderParams,
    ReadInput,
    is_multiple_choice,
    parse_params,
)
from pipeline.readers.prompts import ABSTENTION_ANSWER

KIND = "offline"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SPEAKER = re.compile(r"^([^:\n]{1,40}):\s+(.*)$")
_WHEN = re.compile(r"^\s*(when|what (date|day|month|year|time))\b", re.IGNORECASE)


class OfflineReaderParams(ReaderParams):
    abstain_below: float = Field(default=0.30, ge=-1.0, le=1.0)
    cross_encoder_path: str | None = None  # local folder of a sentence-transformers CrossEncoder
    max_spans: int = Field(default=400, gt=0)  # cap on sentences scored per question
    # turns whose sentences are scored (by turn-vector cosine); None = every retrieved turn
    shortlist_turns: int | None = Field(default=5, gt=0)


@dataclass(frozen=True)
class Span:
    """A sentence of a retrieved unit: ``text`` is returned, ``embed_text`` (with speaker) scored."""

    text: str
    embed_text: str
    session_key: str
    order: int


@dataclass(frozen=True)
class Piece:
    """One turn of a retrieved unit (or the whole unit when it has no speaker lines)."""

    text: str
    session_key: str
    rank: int


def split_turns(text: str, speakers: frozenset[str]) -> list[str]:
    """``text`` cut before every line ``<speaker>: ...`` of a known speaker; joined back by "\n"
    the pieces are ``text`` again. A unit is its turns' texts joined by newlines, so the pieces
    are the texts the embeddings asset embedded (a turn containing such a line is cut too: its
    pieces are then embedded on their own, a cost, not an error)."""
    pieces: list[list[str]] = []
    for line in text.split("\n"):
        match = _SPEAKER.match(line)
        if not pieces or (match is not None and match.group(1) in speakers):
            pieces.append([line])
        else:
            pieces[-1].append(line)
    return ["\n".join(p) for p in pieces]


def unit_speakers(units: Sequence[RetrievedUnit]) -> frozenset[str]:
    """Speakers that start one of the units: the line prefixes that start a new turn."""
    firsts = (_SPEAKER.match(u.text.split("\n", 1)[0]) for u in units)
    return frozenset(m.group(1) for m in firsts if m is not None)


def unit_turns(text: str, speakers: frozenset[str]) -> list[str]:
    """A unit's non-blank turns (``split_turns`` without the blank pieces)."""
    return [t for t in split_turns(text, speakers) if t.strip()]


def unit_pieces(units: tuple[RetrievedUnit, ...]) -> list[Piece]:
    """The turns of the units in retrieval order, deduplicated by text."""
    ordered = sorted(units, key=lambda u: u.rank)
    speakers = unit_speakers(ordered)
    return dedup_pieces(ordered, [unit_turns(u.text, speakers) for u in ordered])[0]


def dedup_pieces(
    ordered: Sequence[RetrievedUnit], turns: Sequence[Sequence[str]]
) -> tuple[list[Piece], list[tuple[int, int]]]:
    """Pieces of ``turns`` (one list per unit, retrieval order) first seen, and where each came
    from: (unit position, turn position)."""
    pieces: list[Piece] = []
    where: list[tuple[int, int]] = []
    seen: set[str] = set()
    for u, (unit, texts) in enumerate(zip(ordered, turns, strict=True)):
        for t, text in enumerate(texts):
            if text not in seen:
                seen.add(text)
                pieces.append(Piece(text, unit.session_key, len(pieces)))
                where.append((u, t))
    return pieces, where


class UnitTurns:
    """Units' turn texts and (once asked) turn vectors, memoised per (unit text, speakers).

    Why: the same unit comes back for many (question, system) pairs (a LoCoMo conversation's
    sessions for each of its ~200 questions under full_context): splitting it and looking each
    turn up in the embedding cache (a sha256 per turn) every time cost ~6 s of the answers stage
    on configs/shared.yaml (2.0M turn lookups). The reader clears it per prefetch chunk, and it
    clears itself at ``MEMO_UNITS`` units, so it holds what neighbouring questions share.
    """

    MEMO_UNITS = 4096

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self._turns: dict[tuple[str, frozenset[str]], list[str]] = {}
        self._vectors: dict[tuple[str, frozenset[str]], np.ndarray] = {}

    def clear(self) -> None:
        self._turns.clear()
        self._vectors.clear()

    def turns(self, units: Sequence[RetrievedUnit], speakers: frozenset[str]) -> list[list[str]]:
        """``unit_turns`` of each unit."""
        if len(self._turns) + len(units) > self.MEMO_UNITS:
            self.clear()
        out = []
        for unit in units:
            key = (unit.text, speakers)
            turns = self._turns.get(key)
            if turns is None:
                turns = self._turns[key] = unit_turns(unit.text, speakers)
            out.append(turns)
        return out

    def vectors(self, units: Sequence[RetrievedUnit], speakers: frozenset[str]) -> list[np.ndarray]:
        """Per unit, the vectors of its ``turns`` rows (call ``turns`` first); the units not
        memoised yet are looked up, and any turn not cached embedded, in one encode call."""
        keys = [(u.text, speakers) for u in units]
        todo = [k for k in dict.fromkeys(keys) if k not in self._vectors]
        if todo:
            flat = self.encoder.encode([t for k in todo for t in self._turns[k]])
            start = 0
            for k in todo:
                n = len(self._turns[k])
                self._vectors[k] = flat[start : start + n]
                start += n
        return [self._vectors[k] for k in keys]


class _Ranked(Protocol):
    """A retrieved unit or a turn of one: what ``unit_spans`` reads."""

    @property
    def rank(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def session_key(self) -> str: ...


def unit_spans(units: Sequence[_Ranked], limit: int) -> list[Span]:
    """Sentences of the units in retrieval order, deduplicated, at most ``limit``."""
    spans: list[Span] = []
    seen: set[str] = set()
    for unit in sorted(units, key=lambda u: u.rank):
        for line in unit.text.splitlines():
            match = _SPEAKER.match(line.strip())
            speaker, body = (match.group(1), match.group(2)) if match else ("", line.strip())
            for sentence in _SENTENCE_END.split(body):
                sentence = sentence.strip()
                if not re.search(r"\w", sentence) or sentence in seen:
                    continue
                seen.add(sentence)
                embed = f"{speaker}: {sentence}" if speaker else sentence
                spans.append(Span(sentence, embed, unit.session_key, len(spans)))
                if len(spans) >= limit:
                    return spans
    return spans


def best_span(question: str, spans: list[Span], sims: np.ndarray) -> tuple[Span, float]:
    """The span ranked first by (cosine rounded to 3 decimals, shared keywords, earliest)."""
    q_words = set(keywords(question))

    def key(i: int) -> tuple[float, int, int]:
        overlap = len(q_words & set(keywords(spans[i].embed_text)))
        return (-round(float(sims[i]), 3), -overlap, spans[i].order)

    i = min(range(len(spans)), key=key)
    return spans[i], float(sims[i])


def _shortlist_key(question: str, units: tuple[RetrievedUnit, ...]) -> tuple[str, tuple[tuple[int, str], ...]]:
    return question, tuple((u.rank, u.text) for u in units)


class OfflineReader:
    params_model = OfflineReaderParams
    kind = KIND
    label = LABEL_OFFLINE
    uses_encoder = True
    uses_llm = False
    thread_safe = False  # one torch model and one embedding cache: calls are serialised

    def __init__(self, params: dict[str, Any], deps: ReaderDeps) -> None:
        self.params = parse_params(self.params_model, params, KIND)
        if deps.encoder is None:
            raise ReaderConfigError("reader kind 'offline' needs an embedding encoder; none was given")
        path = self.params.cross_encoder_path
        if path is not None and not Path(path).is_dir():
            raise ReaderConfigError(f"reader kind 'offline': cross_encoder_path {path!r} is not a folder")
        self.encoder: Encoder = deps.encoder
        self._cross: Any = None
        self._shortlists: dict[tuple[str, tuple[tuple[int, str], ...]], list[Piece]] = {}  # filled by prefetch
        self._turns = UnitTurns(self.encoder)

    @classmethod
    def identity(cls, params: Mapping[str, Any], cfg: BenchmarkConfig) -> str:
        emb = cfg.embeddings  # the vectors depend on model, backend (fp32/bf16/int8) and truncation
        return f"{emb.model}|{emb.backend}|{emb.max_seq_length}|cross={params.get('cross_encoder_path')}"

    def model_id(self) -> str:
        """The ``model`` column: the encoder (and cross-encoder) that produced the answer."""
        cross = f"+cross:{self.params.cross_encoder_path}" if self.params.cross_encoder_path else ""
        return f"{self.encoder.model_name}{cross}"

    def answer(self, item: ReadInput) -> Answer:
        if is_multiple_choice(item.question):
            return self._multiple_choice(item)
        return self._free_form(item)

    # ---- multiple choice -----------------------------------------------------------------
    def _multiple_choice(self, item: ReadInput) -> Answer:
        q = item.question
        assert q.choices is not None
        queries = [f"{q.question} {choice}" for choice in q.choices]
        support = [u.text for u in item.retrieval.units] or [q.question]
        scores = self._pair_scores(queries, support).max(axis=1)
        index = int(np.argmax(scores))  # first maximum: ties go to the lowest index
        return Answer(q.choices[index], index, False, self.model_id(), cost_usd=0.0)

    def _pair_scores(self, queries: list[str], support: list[str]) -> np.ndarray:
        """(len(queries), len(support)) relevance: cross-encoder if configured, else cosine."""
        if self.params.cross_encoder_path:
            pairs = [(qtext, s) for qtext in queries for s in support]
            flat = np.asarray(self._cross_encoder().predict(pairs), dtype=np.float64)
            return flat.reshape(len(queries), len(support))
        vecs = self.encoder.encode([*queries, *support])  # one call: one cache lookup / shard write
        qv, sv = vecs[: len(queries)], vecs[len(queries) :]
        return np.asarray(qv @ sv.T, dtype=np.float64)

    def _cross_encoder(self) -> Any:
        if self._cross is None:
            hub_offline()
            from sentence_transformers import CrossEncoder

            self._cross = CrossEncoder(self.params.cross_encoder_path, device="cpu", local_files_only=True)
        return self._cross

    # ---- free form -----------------------------------------------------------------------
    def prefetch(self, items: Sequence[ReadInput]) -> None:
        """Embed, in one call, the sentences the free-form answers to ``items`` will score.

        Why: answered one question at a time, the new sentences per call averaged 7 on
        configs/shared.yaml: ~2,800 model calls on tiny batches and as many cache shards. The
        answers stage calls this for a chunk of questions (pipeline/readers/run.py) before
        answering them; the shortlists computed here are reused, not recomputed. The batch runs in
        lanes of one torch thread (``lane_calls``), not the one-call path of per-question calls: a
        span's vector can differ from the per-question one in the last bits (bf16), never its text
        or its key, and which lane embeds a sentence depends only on the chunk, never on timing.
        """
        self._shortlists.clear()
        self._turns.clear()
        texts: list[str] = []
        for item in items:
            q = item.question
            if is_multiple_choice(q):
                continue
            shortlist = self._shortlist(q.question, item.retrieval.units)
            self._shortlists[_shortlist_key(q.question, item.retrieval.units)] = shortlist
            texts += [q.question, *(s.embed_text for s in unit_spans(shortlist, self.params.max_spans))]
        if texts:  # a large batch of short texts: parallel lanes of one torch thread (lane_calls)
            with lane_calls():
                self.encoder.encode(texts)

    def _shortlist(self, question: str, units: tuple[RetrievedUnit, ...]) -> list[Piece]:
        """The ``shortlist_turns`` turns closest to the question, in retrieval order (step 1)."""
        known = self._shortlists.pop(_shortlist_key(question, units), None)
        if known is not None:
            return known
        ordered = sorted(units, key=lambda u: u.rank)
        speakers = unit_speakers(ordered)
        turns = self._turns.turns(ordered, speakers)
        pieces, where = dedup_pieces(ordered, turns)
        limit = self.params.shortlist_turns
        if limit is None or len(pieces) <= limit:
            return pieces
        vectors = self._turns.vectors(ordered, speakers)  # cached turn vectors: no model call
        query = self.encoder.encode([question])[0]
        sims = np.stack([vectors[u][t] for u, t in where]) @ query
        rounded = [round(x, 3) for x in sims.tolist()]
        best = heapq.nsmallest(limit, range(len(pieces)), key=lambda i: (-rounded[i], i))
        return [pieces[i] for i in sorted(best)]

    def _free_form(self, item: ReadInput) -> Answer:
        q = item.question
        spans = unit_spans(self._shortlist(q.question, item.retrieval.units), self.params.max_spans)
        if not spans:
            return Answer(ABSTENTION_ANSWER, None, False, self.model_id(), cost_usd=0.0)
        with short_text_calls():  # one torch thread for these short sentences (see the module doc)
            vecs = self.encoder.encode([q.question, *(s.embed_text for s in spans)])
        sims = np.asarray(vecs[1:] @ vecs[0], dtype=np.float64)
        span, sim = best_span(q.question, spans, sims)
        if sim < self.params.abstain_below:
            return Answer(ABSTENTION_ANSWER, None, False, self.model_id(), cost_usd=0.0)
        text = span.text
        date = item.session_dates.get(span.session_key)
        if date and _WHEN.match(q.question):
            text = f"{text} ({date})"
        return Answer(text, None, False, self.model_id(), cost_usd=0.0)
