"""LongMemEval loader (oracle / S / M, ``.json`` or ``.json.gz``), streamed record by record.

One record = one question with its own haystack (``haystack_id = question_id``). Quirks handled
and counted (``data_quality.kind``):
- ``has_answer_missing``: S/M only mark turns of answer sessions; a missing key means false
  (one row per question, ``count`` = turns without the key).
- ``repeated_session_id``: a session id occurs twice in one haystack (13 questions of S, each time
  with another date): both occurrences are kept as distinct sessions; an exact duplicate (same
  date and turns) keeps its first position only.
- ``empty_turn``: empty ``content``; the turn is kept so positions (and turn ids) stay aligned.
- ``integer_answer``: numeric answers converted to text.
- ``answer_session_missing``: an ``answer_session_ids`` entry absent from the haystack.
- ``answer_session_no_has_answer``: an answer session without any ``has_answer`` turn
  (session-level evidence only).
- ``unparseable_date``: a date not in the ``2023/04/10 (Mon) 23:07`` form (raw kept, parsed NULL).
Evidence: session level = the haystack sessions listed in ``answer_session_ids``; turn level = the
``has_answer`` turns inside them. ``is_abstention`` = the id ends in ``_abs``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

from pipeline.core.families import is_abstention_id
from pipeline.core.partitions import KeyRegistry
from pipeline.core.records import (
    LEVEL_SESSION,
    LEVEL_TURN,
    EvidenceRow,
    HaystackRow,
    ParsedRecord,
    QuestionRow,
    SessionWithTurns,
    TurnColumns,
)
from pipeline.datasets.base import RecordContext, RecordError, unknown_id
from pipeline.datasets.dates import parse_longmemeval_datetime
from pipeline.datasets.fields import (
    answer_text,
    as_object,
    check_type,
    optional,
    parse_keyed_record,
    required,
    same_length,
    string_list,
)
from pipeline.datasets.sessions import session_of_columns
from pipeline.datasets.sources import iter_json_array

ROLES = frozenset({"user", "assistant"})


def load_longmemeval(path: Path, dataset: str) -> Generator[ParsedRecord, None, None]:
    """Yield one ParsedRecord per question of a LongMemEval file (bounded memory)."""
    keys = KeyRegistry(dataset)
    for index, raw in iter_json_array(path):
        yield parse_record(RecordContext(dataset, str(path), index, unknown_id(index)), raw, keys)


def load_longmemeval_keys(path: Path, dataset: str) -> Generator[ParsedRecord, None, None]:
    """``load_longmemeval`` for the keys scan (pipeline/datasets/keys.py): each record's id and key
    only, its question left unparsed and marked as a keyed failure.

    Why: the scan at definitions load needs the partition keys, which the id alone decides
    (``parse_keyed_record`` assigns the key, or the key conflict, before the question is parsed);
    parsing every haystack for them was ~10 % of a 498-question LongMemEval_S run, done again by
    the conversion. The ids, keys and key conflicts are the full loader's, record by record, so
    any slice that counts a question and a keyed failure alike (``limit``, ``question_ids``; not
    ``limit_per_type``, which needs the question's type) keeps the same records.
    """
    keys = KeyRegistry(dataset)
    for index, raw in iter_json_array(path):
        yield parse_keyed_record(RecordContext(dataset, str(path), index, unknown_id(index)), raw, keys, _unparsed)


def _unparsed(ctx: RecordContext, obj: Mapping[str, Any], qid: str, key: str) -> ParsedRecord:
    return ctx.failure(RecordError("<keys scan>", "question not parsed"), key)


def parse_record(ctx: RecordContext, raw: Any, keys: KeyRegistry) -> ParsedRecord:
    """One LongMemEval record -> ParsedRecord, or a failure naming the bad field."""
    return parse_keyed_record(ctx, raw, keys, _parse_question)


def _parse_question(ctx: RecordContext, obj: Mapping[str, Any], qid: str, key: str) -> ParsedRecord:
    qtype = required(obj, "question_type", str)
    question = required(obj, "question", str)
    answer = answer_text(required(obj, "answer", (str, int, float)), "answer", ctx)
    date_raw = required(obj, "question_date", str)
    sessions, haystack = _haystack(ctx, obj, qid)
    evidence = _evidence(ctx, obj, qid, key, sessions, haystack)
    row = QuestionRow(
        dataset=ctx.dataset,
        question_id=qid,
        partition_key=key,
        record_index=ctx.index,
        type_raw=qtype,
        type_name=qtype,
        question=question,
        answer=answer,
        adversarial_answer=None,
        choices=None,
        correct_choice_index=None,
        question_date_raw=date_raw,
        question_date=_date(ctx, date_raw, "question_date"),
        is_abstention=is_abstention_id(qid),
        haystack_id=qid,
    )
    unique = tuple({s.session.session_key: s for s in sessions}.values())
    return ParsedRecord(row, unique, tuple(haystack), evidence, ctx.take_issues())


def _date(ctx: RecordContext, raw: str, field: str) -> Any:
    parsed = parse_longmemeval_datetime(raw)
    if parsed is None:
        ctx.issue("unparseable_date", field, raw, "raw kept, parsed date NULL")
    return parsed


def _haystack(ctx: RecordContext, obj: Mapping[str, Any], qid: str) -> tuple[list[SessionWithTurns], list[HaystackRow]]:
    """Sessions in haystack order (one per kept position) and the haystack rows."""
    ids = string_list(obj, "haystack_session_ids")
    dates = string_list(obj, "haystack_dates")
    raw_sessions = required(obj, "haystack_sessions", list)
    same_length("haystack_session_ids", ids, "haystack_dates", dates)
    same_length("haystack_session_ids", ids, "haystack_sessions", raw_sessions)
    sessions: list[SessionWithTurns] = []
    rows: list[HaystackRow] = []
    seen: dict[str, str] = {}  # source id -> session key of its first occurrence
    missing_has_answer = 0
    for i, (sid, date_raw, raw) in enumerate(zip(ids, dates, raw_sessions, strict=True)):
        turns, missing = _turns(ctx, raw, f"haystack_sessions[{i}]")
        missing_has_answer += missing
        when = _date(ctx, date_raw, f"haystack_dates[{i}]")
        session = session_of_columns(ctx.dataset, sid, date_raw, when, None, turns)
        skey = session.session.session_key
        if sid in seen:
            duplicate = seen[sid] == skey
            action = "dropped exact duplicate (same date and turns)" if duplicate else "kept both occurrences"
            ctx.issue("repeated_session_id", f"haystack_session_ids[{i}]", sid, action)
            if duplicate:
                continue
        seen.setdefault(sid, skey)
        sessions.append(session)
        rows.append(HaystackRow(ctx.dataset, qid, len(rows), skey, sid))
    if missing_has_answer:
        ctx.issue(
            "has_answer_missing", "haystack_sessions[].has_answer", "<missing>", "treated as false", missing_has_answer
        )
    return sessions, rows


def _turns(ctx: RecordContext, raw: Any, path: str) -> tuple[TurnColumns, int]:
    """Turns of one session as columns, and how many lacked ``has_answer``.

    The common well-formed turn takes an inline fast path (~245k turns in S); anything unusual
    goes through ``_checked_turn``, which raises the precise ``RecordError``. Columns, not a
    ``TurnSpec`` per turn: the converter writes them as they are (pipeline/core/records.py).
    """
    check_type(raw, list, path)
    roles: list[str] = []
    texts: list[str] = []
    flags: list[bool] = []
    missing = 0
    role: Any  # str, str, bool | None once checked: by ``ok`` on the fast path, else by _checked_turn
    text: Any
    has_answer: Any
    for j, turn in enumerate(raw):
        if type(turn) is dict:
            role, text, has_answer = turn.get("role"), turn.get("content"), turn.get("has_answer")
            ok = role in ROLES and type(text) is str and (has_answer is None or type(has_answer) is bool)
        else:
            ok = False
        if not ok:
            role, text, has_answer = _checked_turn(turn, f"{path}[{j}]")
        if has_answer is None:
            missing += 1
        if not text.strip():
            ctx.issue("empty_turn", f"{path}[{j}].content", text, "kept as empty text (positions preserved)")
        roles.append(role)
        texts.append(text)
        flags.append(has_answer is True)
    nones = (None,) * len(texts)
    role_column = tuple(roles)  # LongMemEval's speaker is its role
    return TurnColumns(role_column, role_column, tuple(texts), tuple(flags), nones, nones), missing


def _checked_turn(item: Any, path: str) -> tuple[str, str, bool | None]:
    """(role, content, has_answer) of a turn, raising a RecordError naming the bad field."""
    turn = as_object(item, path)
    role = required(turn, "role", str, path + ".")
    if role not in ROLES:
        raise RecordError(f"{path}.role", f"expected 'user' or 'assistant', got {role!r}")
    return role, required(turn, "content", str, path + "."), optional(turn, "has_answer", bool, path + ".")


def _evidence(
    ctx: RecordContext,
    obj: Mapping[str, Any],
    qid: str,
    key: str,
    sessions: list[SessionWithTurns],
    haystack: list[HaystackRow],
) -> tuple[EvidenceRow, ...]:
    """Session-level rows for answer sessions, turn-level rows for their has_answer turns."""
    answer_ids = string_list(obj, "answer_session_ids")
    present = {h.source_session_id for h in haystack}
    for sid in dict.fromkeys(answer_ids):
        if sid not in present:
            ctx.issue("answer_session_missing", "answer_session_ids", sid, "no evidence row for it")
    wanted = set(answer_ids)
    rows: dict[tuple[str, str], EvidenceRow] = {}
    for h, s in zip(haystack, sessions, strict=True):
        if h.source_session_id not in wanted:
            continue
        rows[(LEVEL_SESSION, h.session_key)] = EvidenceRow(
            ctx.dataset, qid, key, LEVEL_SESSION, h.session_key, h.source_session_id
        )
        marked = s.answer_positions()
        if not marked:
            ctx.issue(
                "answer_session_no_has_answer", "answer_session_ids", h.source_session_id, "session-level evidence only"
            )
        for position in marked:
            turn_id = f"{h.session_key}:{position}"
            source = f"{h.source_session_id}:{position}"
            rows[(LEVEL_TURN, turn_id)] = EvidenceRow(ctx.dataset, qid, key, LEVEL_TURN, turn_id, source)
    return tuple(rows.values())
