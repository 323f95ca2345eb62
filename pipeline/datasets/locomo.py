"""LoCoMo loader (``locomo10.json``): one record per conversation, one question per QA item.

``question_id = "<sample_id>_q<i>"`` (``i`` = 0-based index in ``qa``, the numbering LoCoMo-MC10
uses), ``haystack_id = sample_id``, ``record_index`` = the conversation's index in the file.
``speaker_a`` -> role ``user``, ``speaker_b`` -> role ``assistant`` (``speaker`` keeps the name).
Quirks handled and counted (``data_quality.kind``):
- ``date_without_session``: ``session_<n>_date_time`` with no ``session_<n>`` (conv-26: 20-35).
- ``adversarial_no_answer``: category 5 without ``answer`` (answer NULL, adversarial_answer kept).
- ``integer_answer``, ``answer_semicolon`` (kept verbatim; the official scorer uses the part
  before ';' for category 3).
- evidence repairs (see locomo_evidence): ``evidence_semicolon_joined``, ``evidence_space_joined``,
  ``evidence_extra_colon``, ``evidence_zero_padded``, ``evidence_unparseable`` (dropped),
  ``evidence_missing_turn`` (dropped), ``evidence_duplicate`` (dropped), ``no_evidence``.
- ``image_caption``: turns sharing an image; ``blip_caption`` goes to ``turns.caption``
  (one row per conversation, ``count`` = such turns); ``img_url``/``query`` are not kept.
- ``empty_session``, ``session_date_missing``, ``unparseable_date``, ``empty_turn``,
  ``unknown_speaker``, ``dia_id_mismatch``: defensive, none occur in locomo10.json.
Evidence: turn level from the repaired D ids; session level = the sessions of those turns. The
evidence list exactly as given is kept in ``questions.evidence_raw`` (LoCoMo's official evidence
recall compares those raw strings, pipeline.metrics.locomo_evidence).
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pipeline.core.partitions import KeyRegistry
from pipeline.core.records import (
    LEVEL_SESSION,
    LEVEL_TURN,
    EvidenceRow,
    HaystackRow,
    ParsedRecord,
    QuestionRow,
    SessionWithTurns,
    TurnRow,
)
from pipeline.datasets.base import KeyConflict, RecordContext, RecordError, unknown_id
from pipeline.datasets.categories import ADVERSARIAL_CATEGORY, LOCOMO_CATEGORY_NAMES
from pipeline.datasets.dates import parse_locomo_datetime
from pipeline.datasets.fields import answer_text, as_object, check_type, optional, required, string_list
from pipeline.datasets.locomo_evidence import normalize_id, split_evidence
from pipeline.datasets.sessions import TurnSpec, build_session
from pipeline.datasets.sources import iter_json_array

_SESSION = re.compile(r"^session_(\d+)$")
_DATE = re.compile(r"^session_(\d+)_date_time$")

EVIDENCE_ACTIONS = {
    "evidence_semicolon_joined": "split into separate ids",
    "evidence_space_joined": "split into separate ids",
    "evidence_extra_colon": "repaired D:<s>:<t> -> D<s>:<t>",
    "evidence_zero_padded": "leading zeros removed",
    "evidence_unparseable": "dropped",
}


class Conversation(NamedTuple):
    """A parsed conversation: its sessions in order, haystack rows, and D-id -> turn."""

    sessions: tuple[SessionWithTurns, ...]
    haystack: tuple[HaystackRow, ...]
    turns_by_dia: Mapping[str, tuple[TurnRow, str]]  # normalized D id -> (turn, "session_<n>")


def load_locomo(path: Path, dataset: str) -> Generator[ParsedRecord, None, None]:
    """Yield one ParsedRecord per QA item of every conversation."""
    keys = KeyRegistry(dataset)
    samples: set[str] = set()
    for index, raw in iter_json_array(path):
        ctx = RecordContext(dataset, str(path), index, unknown_id(index))
        yield from conversation_records(ctx, raw, keys, samples)


def conversation_records(
    ctx: RecordContext, raw: Any, keys: KeyRegistry, samples: set[str] | None = None
) -> Iterator[ParsedRecord]:
    """All questions of one conversation; a broken conversation fails each of its questions.

    A repeated ``sample_id`` fails every question of the later conversation (its haystack id is
    taken, so its questions would silently be asked of the first conversation) and, through the
    key conflicts, the earlier conversation's questions with the same numbers.
    """
    try:
        obj = as_object(raw, "<record>")
        sample_id = required(obj, "sample_id", str)
        ctx.record_id = sample_id
        qa = required(obj, "qa", list)
    except RecordError as err:
        yield ctx.failure(err, None)
        return
    qids = [f"{sample_id}_q{i}" for i in range(len(qa))]
    repeated = samples is not None and sample_id in samples
    if samples is not None:
        samples.add(sample_id)
    pkeys: list[str | None] = []
    conflicts: dict[str, KeyConflict] = {}
    for qid in qids:
        try:
            pkeys.append(ctx.key_for(keys, qid))
        except KeyConflict as err:
            pkeys.append(None)
            conflicts[qid] = err
    if repeated:
        dup = RecordError("sample_id", f"duplicate sample_id {sample_id!r}; the questions of both conversations fail")
        for qid in qids:
            ctx.record_id = qid
            yield ctx.conflict_failure(conflicts[qid]) if qid in conflicts else ctx.failure(dup, None, record_id=qid)
        return
    for qid, conflict in conflicts.items():
        yield ctx.conflict_failure(conflict, record_id=qid)
    try:
        conv = parse_conversation(ctx, obj, sample_id)
    except RecordError as err:
        for qid, key in zip(qids, pkeys, strict=True):
            if key is not None:
                yield ctx.failure(err, key, record_id=qid)
        return
    if not qa:
        ctx.issue("no_questions", "qa", "[]", "conversation stored without questions")
        yield ParsedRecord(None, conv.sessions, conv.haystack, issues=ctx.take_issues())
    for i, item in enumerate(qa):
        key = pkeys[i]
        if key is None:  # already failed as a key conflict
            continue
        ctx.record_id = qids[i]  # issues and failures of this item name the question
        yield qa_record(ctx, conv, i, item, qids[i], key, sample_id)


def parse_conversation(ctx: RecordContext, obj: Mapping[str, Any], sample_id: str) -> Conversation:
    """Sessions (numeric order) of ``conversation``; issues go to ``ctx`` (first question)."""
    conv = required(obj, "conversation", dict)
    roles = {
        required(conv, "speaker_a", str, "conversation."): "user",
        required(conv, "speaker_b", str, "conversation."): "assistant",
    }
    summaries = optional(obj, "session_summary", dict) or {}
    observations = optional(obj, "observation", dict) or {}
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)))
    dated = {int(m.group(1)) for k in conv if (m := _DATE.match(k))}
    for n in sorted(dated - set(numbers)):
        field = f"conversation.session_{n}_date_time"
        ctx.issue("date_without_session", field, str(conv[f"session_{n}_date_time"]), "ignored: no session turns")
    sessions: list[SessionWithTurns] = []
    haystack: list[HaystackRow] = []
    by_dia: dict[str, tuple[TurnRow, str]] = {}
    captions = 0
    for n in numbers:
        raw_turns = check_type(conv[f"session_{n}"], list, f"conversation.session_{n}")
        if not raw_turns:
            ctx.issue("empty_session", f"conversation.session_{n}", "[]", "skipped")
            continue
        turns = [_turn(ctx, t, n, j, roles) for j, t in enumerate(raw_turns)]
        captions += sum(t.caption is not None for t in turns)
        date_raw = _session_date(ctx, conv, n)
        summary = summaries.get(f"session_{n}_summary")
        session = build_session(
            ctx.dataset,
            f"session_{n}",
            date_raw,
            parse_locomo_datetime(date_raw) if date_raw else None,
            summary if isinstance(summary, str) else None,
            turns,
            observation_json(observations.get(f"session_{n}_observation")),
        )
        sessions.append(session)
        haystack.append(HaystackRow(ctx.dataset, sample_id, len(haystack), session.session.session_key, f"session_{n}"))
        for t in session.turns:
            dia = t.source_id or ""
            by_dia[normalize_id(dia)[0] or dia] = (t, f"session_{n}")
    if captions:
        ctx.issue(
            "image_caption",
            "conversation.session_*[].blip_caption",
            "<caption>",
            "caption kept in turns.caption; img_url/query dropped",
            captions,
        )
    return Conversation(tuple(sessions), tuple(haystack), by_dia)


def observation_json(raw: Any) -> str | None:
    """A session's ``{speaker: [[fact, dialogue id(s)], ...]}`` as JSON ``[[speaker, fact, ids], ...]``
    in the file's order (the order LoCoMo's RAG database lists them); None when absent or not that shape."""
    if not isinstance(raw, dict):
        return None
    rows = [[speaker, item[0], item[1]] for speaker, items in raw.items() if isinstance(items, list)
            for item in items if isinstance(item, list) and len(item) == 2]  # fmt: skip
    return json.dumps(rows, ensure_ascii=False) if rows else None


def _session_date(ctx: RecordContext, conv: Mapping[str, Any], n: int) -> str | None:
    field = f"session_{n}_date_time"
    date_raw = optional(conv, field, str, "conversation.")
    if date_raw is None:
        ctx.issue("session_date_missing", f"conversation.{field}", "<missing>", "session date NULL")
    elif parse_locomo_datetime(date_raw) is None:
        ctx.issue("unparseable_date", f"conversation.{field}", date_raw, "raw kept, parsed date NULL")
    return date_raw


def _turn(ctx: RecordContext, raw: Any, n: int, j: int, roles: Mapping[str, str]) -> TurnSpec:
    path = f"conversation.session_{n}[{j}]"
    turn = as_object(raw, path)
    speaker = required(turn, "speaker", str, path + ".")
    text = required(turn, "text", str, path + ".")
    dia_id = required(turn, "dia_id", str, path + ".")
    caption = optional(turn, "blip_caption", str, path + ".")
    role = roles.get(speaker)
    if role is None:
        ctx.issue("unknown_speaker", f"{path}.speaker", speaker, "role set to 'user'")
        role = "user"
    if normalize_id(dia_id)[0] != f"D{n}:{j + 1}":
        ctx.issue("dia_id_mismatch", f"{path}.dia_id", dia_id, f"kept; position says D{n}:{j + 1}")
    if not text.strip():
        ctx.issue("empty_turn", f"{path}.text", text, "kept as empty text (positions preserved)")
    return TurnSpec(speaker, role, text, False, dia_id, caption or None)


def qa_record(
    ctx: RecordContext, conv: Conversation, i: int, item: Any, qid: str, key: str, sample_id: str
) -> ParsedRecord:
    """One QA item -> question + evidence (conversation issues ride on the first record)."""
    path = f"qa[{i}]."
    try:
        obj = as_object(item, f"qa[{i}]")
        question = required(obj, "question", str, path)
        category = required(obj, "category", int, path)
        if category not in LOCOMO_CATEGORY_NAMES:
            raise RecordError(f"{path}category", f"unknown category {category}; expected 1-5")
        answer = _answer(ctx, obj, category, path)
        adversarial = optional(obj, "adversarial_answer", (str, int, float), path)
        raw_evidence = string_list(obj, "evidence", path)
    except RecordError as err:
        return ctx.failure(err, key)
    evidence = _evidence(ctx, conv, raw_evidence, qid, key, path)
    row = QuestionRow(
        dataset=ctx.dataset,
        question_id=qid,
        partition_key=key,
        record_index=ctx.index,
        type_raw=str(category),
        type_name=LOCOMO_CATEGORY_NAMES[category],
        question=question,
        answer=answer,
        adversarial_answer=None if adversarial is None else str(adversarial),
        choices=None,
        correct_choice_index=None,
        question_date_raw=None,
        question_date=None,
        is_abstention=category == ADVERSARIAL_CATEGORY,
        haystack_id=sample_id,
        evidence_raw=tuple(raw_evidence),
    )
    return ParsedRecord(row, conv.sessions, conv.haystack, evidence, ctx.take_issues())


def _answer(ctx: RecordContext, obj: Mapping[str, Any], category: int, path: str) -> str | None:
    if obj.get("answer") is None and category == ADVERSARIAL_CATEGORY:
        ctx.issue("adversarial_no_answer", f"{path}answer", "<missing>", "answer NULL; adversarial_answer kept")
        return None
    answer = answer_text(required(obj, "answer", (str, int, float), path), f"{path}answer", ctx)
    if ";" in answer:
        ctx.issue("answer_semicolon", f"{path}answer", answer, "kept verbatim")
    return answer


def _evidence(
    ctx: RecordContext, conv: Conversation, raw_ids: list[str], qid: str, key: str, path: str
) -> tuple[EvidenceRow, ...]:
    """Turn rows for each readable, existing D id; a session row per session they touch."""
    if not raw_ids:
        ctx.issue("no_evidence", f"{path}evidence", "[]", "no evidence rows")
    rows: dict[tuple[str, str], EvidenceRow] = {}
    for i, raw in enumerate(raw_ids):
        field = f"{path}evidence[{i}]"
        kinds: set[str] = set()
        for token in split_evidence(raw):
            for kind in token.kinds:
                if kind not in kinds:
                    kinds.add(kind)
                    ctx.issue(kind, field, raw, EVIDENCE_ACTIONS[kind])
            if token.normalized is None:
                continue
            found = conv.turns_by_dia.get(token.normalized)
            if found is None:
                ctx.issue("evidence_missing_turn", field, token.normalized, "dropped: no such turn")
                continue
            turn, source_session = found
            if (LEVEL_TURN, turn.turn_id) in rows:
                ctx.issue("evidence_duplicate", field, token.normalized, "dropped duplicate")
                continue
            rows[(LEVEL_TURN, turn.turn_id)] = EvidenceRow(
                ctx.dataset, qid, key, LEVEL_TURN, turn.turn_id, token.normalized
            )
            rows.setdefault(
                (LEVEL_SESSION, turn.session_key),
                EvidenceRow(ctx.dataset, qid, key, LEVEL_SESSION, turn.session_key, source_session),
            )
    return tuple(rows.values())
