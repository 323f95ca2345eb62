"""BEAM loader (mohammadtavakoli78/BEAM, ``chats/<tier>/<n>/``): one record per probing question.

Canonical form (folder layout: pipeline/datasets/beam_layout.py):
- a chat is a haystack (``haystack_id = <tier>-<n>``); a batch is a session
  (``source_session_id = batch-<batch_number>``, ``plan-<k>/batch-<n>`` in the 10M tier) dated by
  its time anchor; a message is a turn (``speaker`` = ``role``; ``source_id`` = the message ``id``,
  shifted in the 10M tier as the official ``download_dataset.py`` combines plans);
- a question: ``question_id = <tier>-<n>-<ability>-<i>`` (``i`` = its index in the ability's list,
  the index the official evaluation pairs answers and rubrics by); ``type_raw`` = ``type_name`` =
  the ability; ``difficulty`` and ``rubric`` as given; ``answer`` = the reference answer
  (``answer``, ``ideal_answer``, ``ideal_response`` or ``ideal_summary``, whichever the ability
  uses); ``is_abstention`` = ability ``abstention``; no question date (BEAM gives none);
- evidence: ``source_chat_ids`` (a list, or a dict of lists such as ``{"first_statement": [...],
  "second_statement": [...]}``) -> one turn row per message id and one session row per batch
  holding one; ``source_id`` = the id as given, prefixed by its dict key (``first_statement:58``).

The ``->-> <batch>,<turn>`` markers that end most user messages are KEPT in the text a memory
sees. Why: every baseline of the official code sends message contents verbatim (the long-context
reader builds its messages from ``content``; the RAG chunks are ``USER: <content>``), so a score
is only comparable with the paper's when memories see the same text; stripping them would also
change what rubric items such as "mentions turn 3" can be matched against. They are counted.

Quirks handled and counted (``data_quality.kind``):
- ``batch_time_from_message``: the batch's ``time_anchor`` is null (every batch of the release) and
  its first message's ``time_anchor`` dates the session; ``batch_time_missing``: neither has one;
  ``unparseable_date``: a time anchor not in the ``March-15-2024`` form (raw kept, parsed NULL);
- ``position_marker`` (one row per chat, ``count`` = messages ending in ``->-> b,t``, kept);
  ``position_marker_malformed`` (a marker not of that form, e.g. ``->-> 2,N/A``, kept);
  ``position_marker_index_mismatch`` (marker and the message's ``index`` disagree, kept);
- ``truncated_chat_used``: the chat has a ``chat_trunecated.json``, read instead of ``chat.json``
  as the official pipeline does; ``plan_ids_offset``: a 10M plan part whose ids restart, shifted;
- ``no_reference_answer``: a question without a reference answer field (instruction and
  preference following give ``expected_compliance`` instead, used as ``answer``; else the rubric);
- ``no_evidence``: a question other than abstention without ``source_chat_ids``, or with an empty
  one (``[]``: 5 of the 100K questions, 1 of the 1M ones);
  ``evidence_missing_message`` (an id no message has: dropped), ``evidence_id_string`` (an id
  given as a string of digits: read as the number), ``evidence_unparseable`` (dropped),
  ``evidence_duplicate`` (dropped);
- ``difficulty_missing`` (absent or empty; kept as given), ``unknown_ability`` (kept as its type).
Record-level failures: a question without ``question`` or a non-empty ``rubric`` of strings (the
official scorer divides by the rubric's length); a chat whose messages cannot be read fails each
of its questions; a chat folder without a readable questions file is one failed record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.families import BEAM_ABILITIES, BEAM_ABSTENTION
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
from pipeline.datasets.base import DatasetFileError, KeyConflict, RecordContext, RecordError
from pipeline.datasets.beam_layout import ChatFolder, RawBatch, find_chats, iter_batches
from pipeline.datasets.dates import parse_beam_datetime
from pipeline.datasets.fields import answer_text, as_object, check_type, optional, required
from pipeline.datasets.sessions import TurnSpec, build_session
from pipeline.datasets.sources import open_source

ROLES = ("user", "assistant")
REFERENCE_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary")
COMPLIANCE_FIELD = "expected_compliance"
MARKER = "->->"
_MARKER_END = re.compile(r"->->\s*(\d+)\s*,\s*(\d+)\s*$")


class BeamConversation:
    """A parsed chat: sessions (batches) in order, haystack rows, and message id -> turn."""

    def __init__(self) -> None:
        self.sessions: list[SessionWithTurns] = []
        self.haystack: list[HaystackRow] = []
        self.by_id: dict[int, TurnRow] = {}


def load_beam(path: Path, dataset: str) -> Generator[ParsedRecord, None, None]:
    """Yield one ParsedRecord per probing question of every chat under ``path``."""
    keys = KeyRegistry(dataset)
    for index, chat in enumerate(find_chats(path)):
        ctx = RecordContext(dataset, str(chat.questions_file), index, chat.haystack_id)
        yield from chat_records(ctx, chat, keys)


@dataclass(frozen=True)
class _Item:
    ability: str
    index: int
    raw: Any
    question_id: str


def chat_records(ctx: RecordContext, chat: ChatFolder, keys: KeyRegistry) -> Iterator[ParsedRecord]:
    """Every question of one chat; a chat whose messages cannot be read fails each of them."""
    try:
        items = _questions(chat)
    except RecordError as err:
        yield ctx.failure(err, None)
        return
    pkeys: dict[str, str] = {}
    for item in items:
        try:
            pkeys[item.question_id] = ctx.key_for(keys, item.question_id)
        except KeyConflict as err:
            ctx.record_id = item.question_id
            yield ctx.conflict_failure(err)
    ctx.record_id = chat.haystack_id
    try:
        conv = parse_chat(ctx, chat)
    except RecordError as err:
        for item in items:
            if item.question_id in pkeys:
                yield ctx.failure(err, pkeys[item.question_id], record_id=item.question_id)
        return
    ctx.file = str(chat.questions_file)
    if not items:
        ctx.issue("no_questions", "probing_questions", "{}", "chat stored without questions")
        yield ParsedRecord(None, tuple(conv.sessions), tuple(conv.haystack), issues=ctx.take_issues())
    sessions, haystack = tuple(conv.sessions), tuple(conv.haystack)
    for item in items:
        key = pkeys.get(item.question_id)
        if key is None:  # already failed as a key conflict
            continue
        ctx.record_id = item.question_id
        yield question_record(ctx, conv, sessions, haystack, item, key, chat)


def _questions(chat: ChatFolder) -> list[_Item]:
    """The chat's questions in file order (ability order, then list order)."""
    path = chat.questions_file
    try:
        with open_source(path) as stream:
            data = json.load(stream)
    except DatasetFileError as exc:
        raise RecordError("probing_questions", exc.reason) from None
    except (ValueError, OSError) as exc:
        raise RecordError("probing_questions", f"{path}: not valid JSON: {exc}") from None
    obj = as_object(data, "probing_questions")
    items: list[_Item] = []
    for ability, questions in obj.items():
        check_type(questions, list, f"probing_questions.{ability}")
        items.extend(_Item(ability, i, raw, f"{chat.haystack_id}-{ability}-{i}") for i, raw in enumerate(questions))
    return items


# ---- the chat -----------------------------------------------------------------------------------
def parse_chat(ctx: RecordContext, chat: ChatFolder) -> BeamConversation:
    """Sessions, haystack and message index of one chat (quirks counted on ``ctx``)."""
    files, rule = chat.message_files()
    if rule == "missing":
        raise RecordError("chat.json", f"{chat.folder}: no chat.json, chat_trunecated.json or plan-<k>/chat.json")
    ctx.file = str(files[0])
    if rule == "truncated":
        ctx.issue("truncated_chat_used", "chat_trunecated.json", str(files[0]), "read instead of chat.json (official)")
    conv = BeamConversation()
    counts = _MarkerCounts()
    offsets = _PlanOffsets()
    try:
        for raw in iter_batches(files, rule):
            ctx.file = str(raw.file)
            _add_batch(ctx, conv, chat.haystack_id, raw, counts, offsets)
    except DatasetFileError as exc:
        raise RecordError(exc.field or "<json>", exc.reason) from None
    counts.report(ctx)
    offsets.report(ctx)
    return conv


class _MarkerCounts:
    """The ``->->`` markers of one chat, counted once per chat (one data_quality row per kind)."""

    def __init__(self) -> None:
        self.kept = 0
        self.malformed: list[str] = []
        self.mismatched: list[str] = []

    def see(self, text: str, index: Any, where: str) -> None:
        if MARKER not in text:
            return
        m = _MARKER_END.search(text)
        if m is None:
            self.malformed.append(where)
            return
        self.kept += 1
        if isinstance(index, str) and index.replace(" ", "") != f"{m.group(1)},{m.group(2)}":
            self.mismatched.append(where)

    def report(self, ctx: RecordContext) -> None:
        action = "kept in the text (every official BEAM baseline sends it)"
        if self.kept:
            ctx.issue("position_marker", "turns[][].content", "->-> <batch>,<turn>", action, self.kept)
        if self.malformed:
            ctx.issue("position_marker_malformed", self.malformed[0], "->->", action, len(self.malformed))
        if self.mismatched:
            ctx.issue("position_marker_index_mismatch", self.mismatched[0], "index", "kept", len(self.mismatched))


class _PlanOffsets:
    """10M tier: a plan whose ids restart is shifted by the previous plan's last id + 1."""

    def __init__(self) -> None:
        self.plan: str | None = None
        self.offset = 0
        self.last: int | None = None  # last shifted id of the plans before
        self.current_last: int | None = None
        self.shifted: list[str] = []

    def shift(self, plan: str | None, first_id: int) -> int:
        """The offset of ``plan``'s ids, decided at its first message."""
        if plan != self.plan:
            self.plan = plan
            self.last = self.current_last
            restart = self.last is not None and first_id <= self.last
            self.offset = self.last + 1 if restart and self.last is not None else 0
            if restart and plan is not None:
                self.shifted.append(plan)
        return self.offset

    def report(self, ctx: RecordContext) -> None:
        if self.shifted:
            action = "ids shifted by the previous plan's last id + 1 (as download_dataset.py combines plans)"
            ctx.issue("plan_ids_offset", "plan-<k>/chat.json", ",".join(self.shifted), action, len(self.shifted))


def _add_batch(
    ctx: RecordContext,
    conv: BeamConversation,
    haystack_id: str,
    raw: RawBatch,
    markers: _MarkerCounts,
    offsets: _PlanOffsets,
) -> None:
    where = f"{raw.plan + '.' if raw.plan else ''}[{raw.index}]"
    batch = as_object(raw.obj, where)
    number = optional(batch, "batch_number", int, where + ".")
    turns = check_type(batch.get("turns"), list, f"{where}.turns")
    specs: list[TurnSpec] = []
    ids: list[int] = []
    first_anchor: str | None = None
    for t, group in enumerate(turns):
        check_type(group, list, f"{where}.turns[{t}]")
        for m, item in enumerate(group):
            mpath = f"{where}.turns[{t}][{m}]"
            msg = as_object(item, mpath)
            role = required(msg, "role", str, mpath + ".")
            if role not in ROLES:
                raise RecordError(f"{mpath}.role", f"expected 'user' or 'assistant', got {role!r}")
            mid = required(msg, "id", int, mpath + ".")
            text = required(msg, "content", str, mpath + ".")
            anchor = optional(msg, "time_anchor", str, mpath + ".")
            if first_anchor is None and not specs and anchor is not None:
                first_anchor = anchor
            if not ids:
                offsets.shift(raw.plan, mid)
            mid += offsets.offset
            markers.see(text, msg.get("index"), mpath + ".content")
            if not text.strip():
                ctx.issue("empty_turn", f"{mpath}.content", text, "kept as empty text (positions preserved)")
            specs.append(TurnSpec(role, role, text, False, str(mid)))
            ids.append(mid)
    if ids:
        offsets.current_last = ids[-1]
    label = f"batch-{number if number is not None else raw.index + 1}"
    source = f"{raw.plan}/{label}" if raw.plan else label
    date_raw = _batch_date(ctx, batch, first_anchor, where)
    when = parse_beam_datetime(date_raw) if date_raw is not None else None
    if date_raw is not None and when is None:
        ctx.issue("unparseable_date", f"{where}.time_anchor", date_raw, "raw kept, parsed date NULL")
    session = build_session(ctx.dataset, source, date_raw, when, None, specs)
    skey = session.session.session_key
    conv.sessions.append(session)
    conv.haystack.append(HaystackRow(ctx.dataset, haystack_id, len(conv.haystack), skey, source))
    for mid, turn in zip(ids, session.turns, strict=True):
        if mid in conv.by_id:
            raise RecordError(f"{where}.turns[].id", f"message id {mid} occurs twice in the chat")
        conv.by_id[mid] = turn


def _batch_date(ctx: RecordContext, batch: Mapping[str, Any], first_anchor: str | None, where: str) -> str | None:
    own = optional(batch, "time_anchor", str, where + ".")
    if own is not None:
        return str(own)
    if first_anchor is not None:
        ctx.issue("batch_time_from_message", f"{where}.time_anchor", "null", "the first message's time_anchor used")
        return first_anchor
    ctx.issue("batch_time_missing", f"{where}.time_anchor", "null", "session date NULL")
    return None


# ---- the questions ------------------------------------------------------------------------------
def question_record(
    ctx: RecordContext,
    conv: BeamConversation,
    sessions: tuple[SessionWithTurns, ...],
    haystack: tuple[HaystackRow, ...],
    item: _Item,
    key: str,
    chat: ChatFolder,
) -> ParsedRecord:
    """One probing question -> question + evidence (the chat's issues ride on the first record)."""
    path = f"{item.ability}[{item.index}]."
    try:
        obj = as_object(item.raw, f"{item.ability}[{item.index}]")
        question = required(obj, "question", str, path)
        rubric = _rubric(obj, path)
        difficulty = optional(obj, "difficulty", str, path)
        answer = _answer(ctx, obj, rubric, path)
        source = obj.get("source_chat_ids")
    except RecordError as err:
        return ctx.failure(err, key)
    if difficulty is None or not difficulty.strip():
        ctx.issue("difficulty_missing", f"{path}difficulty", repr(difficulty), "kept as given")
    if item.ability not in BEAM_ABILITIES:
        ctx.issue("unknown_ability", "probing_questions", item.ability, "kept as the question type")
    evidence = _evidence(ctx, conv, source, item, key, path)
    row = QuestionRow(
        dataset=ctx.dataset,
        question_id=item.question_id,
        partition_key=key,
        record_index=ctx.index,
        type_raw=item.ability,
        type_name=item.ability,
        question=question,
        answer=answer,
        adversarial_answer=None,
        choices=None,
        correct_choice_index=None,
        question_date_raw=None,
        question_date=None,
        is_abstention=item.ability == BEAM_ABSTENTION,
        haystack_id=chat.haystack_id,
        difficulty=difficulty,
        rubric=tuple(rubric),
    )
    return ParsedRecord(row, sessions, haystack, evidence, ctx.take_issues())


def _rubric(obj: Mapping[str, Any], path: str) -> list[str]:
    items = required(obj, "rubric", list, path)
    if not items:
        raise RecordError(f"{path}rubric", "empty rubric (the official score divides by its length)")
    for i, item in enumerate(items):
        check_type(item, str, f"{path}rubric[{i}]")
    return items


def _answer(ctx: RecordContext, obj: Mapping[str, Any], rubric: list[str], path: str) -> str:
    for name in REFERENCE_FIELDS:
        if obj.get(name) is not None:
            return answer_text(obj[name], f"{path}{name}", ctx)
    compliance = optional(obj, COMPLIANCE_FIELD, str, path)
    if compliance is not None:
        ctx.issue("no_reference_answer", f"{path}answer", "<missing>", f"answer = {COMPLIANCE_FIELD}")
        return compliance
    ctx.issue("no_reference_answer", f"{path}answer", "<missing>", "answer = the rubric items, one a line")
    return "\n".join(rubric)


def _flat_ids(source: Any, path: str) -> list[tuple[str, Any]]:
    """(label, raw id) of ``source_chat_ids``: a list, a dict of lists, or one id."""
    if isinstance(source, dict):
        out: list[tuple[str, Any]] = []
        for name, value in source.items():
            out.extend((f"{name}:{label}" if label else str(name), v) for label, v in _flat_ids(value, path))
        return out
    if isinstance(source, list):
        return [pair for value in source for pair in _flat_ids(value, path)]
    return [("", source)]


def _message_id(raw: Any) -> int | None:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    return None


def _evidence(
    ctx: RecordContext, conv: BeamConversation, source: Any, item: _Item, key: str, path: str
) -> tuple[EvidenceRow, ...]:
    """Turn rows for each id a message has; a session row per batch they fall in."""
    field = f"{path}source_chat_ids"
    ids = [] if source is None else _flat_ids(source, path)
    if not ids:
        if item.ability != BEAM_ABSTENTION:
            ctx.issue("no_evidence", field, "<missing>" if source is None else json.dumps(source), "no evidence rows")
        return ()
    rows: dict[tuple[str, str], EvidenceRow] = {}
    sessions = {s.session.session_key: s.session.source_session_id for s in conv.sessions}
    for label, raw in ids:
        mid = _message_id(raw)
        given = f"{label}:{raw}" if label else str(raw)
        if mid is None:
            ctx.issue("evidence_unparseable", field, given, "dropped")
            continue
        if isinstance(raw, str):
            ctx.issue("evidence_id_string", field, given, "read as the number")
        turn = conv.by_id.get(mid)
        if turn is None:
            ctx.issue("evidence_missing_message", field, given, "dropped: no message has this id")
            continue
        if (LEVEL_TURN, turn.turn_id) in rows:
            ctx.issue("evidence_duplicate", field, given, "dropped duplicate")
            continue
        rows[(LEVEL_TURN, turn.turn_id)] = EvidenceRow(
            ctx.dataset, item.question_id, key, LEVEL_TURN, turn.turn_id, given
        )
        rows.setdefault(
            (LEVEL_SESSION, turn.session_key),
            EvidenceRow(
                ctx.dataset, item.question_id, key, LEVEL_SESSION, turn.session_key, sessions[turn.session_key]
            ),
        )
    return tuple(rows.values())
