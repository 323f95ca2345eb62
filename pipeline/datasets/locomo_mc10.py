"""LoCoMo-MC10 loader: JSON Lines (despite the ``.json`` name) or a JSON array, streamed.

Each record is one LoCoMo question with 10 choices and its conversation's whole haystack; the
sessions are content-hashed so the ~200 copies per conversation are stored once, and
``haystack_id`` is the content hash of the ordered session keys (records of one conversation
share it). ``type_raw`` = ``question_type`` verbatim; ``type_name`` = ``"mc10:<label>"`` because
the labels are reported (unverified) to follow a naive numbering of LoCoMo categories: the
canonical asset rewrites it from the cross-check against LoCoMo (pipeline.datasets.crosscheck).
``is_abstention`` = label ``adversarial`` until that rewrite. MC10 has no evidence field: no
evidence rows. Turn roles ``user``/``assistant`` are kept; any other role value is treated as a
speaker name (first name -> user, second -> assistant) and counted as ``speaker_as_role``.
Quirks counted: ``integer_answer``, ``answer_not_in_choices``, ``choice_count``
(not 10 choices), ``num_choices_mismatch``, ``num_sessions_mismatch``, ``unparseable_date``,
``empty_turn``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

from pipeline.core.partitions import KeyRegistry
from pipeline.core.records import HaystackRow, ParsedRecord, QuestionRow, SessionWithTurns
from pipeline.datasets.base import RecordContext, RecordError, unknown_id
from pipeline.datasets.categories import MC10_ADVERSARIAL_LABEL, mc10_unverified_name
from pipeline.datasets.dates import parse_iso_datetime
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
from pipeline.datasets.sessions import TurnSpec, build_session, haystack_key
from pipeline.datasets.sources import iter_records_auto

EXPECTED_CHOICES = 10
ROLES = ("user", "assistant")


def load_locomo_mc10(path: Path, dataset: str) -> Generator[ParsedRecord, None, None]:
    """Yield one ParsedRecord per MC10 record (JSON Lines or JSON array)."""
    keys = KeyRegistry(dataset)
    for index, raw in iter_records_auto(path):
        yield parse_record(RecordContext(dataset, str(path), index, unknown_id(index)), raw, keys)


def parse_record(ctx: RecordContext, raw: Any, keys: KeyRegistry) -> ParsedRecord:
    """One MC10 record -> ParsedRecord, or a failure naming the bad field."""
    return parse_keyed_record(ctx, raw, keys, _parse)


def _parse(ctx: RecordContext, obj: Mapping[str, Any], qid: str, key: str) -> ParsedRecord:
    label = required(obj, "question_type", str)
    question = required(obj, "question", str)
    answer = answer_text(required(obj, "answer", (str, int, float)), "answer", ctx)
    choices, correct = _choices(ctx, obj, answer)
    sessions = _sessions(ctx, obj)
    skeys = [s.session.session_key for s in sessions]
    hid = haystack_key(skeys)
    haystack = tuple(
        HaystackRow(ctx.dataset, hid, i, s.session.session_key, s.session.source_session_id)
        for i, s in enumerate(sessions)
    )
    row = QuestionRow(
        dataset=ctx.dataset,
        question_id=qid,
        partition_key=key,
        record_index=ctx.index,
        type_raw=label,
        type_name=mc10_unverified_name(label),
        question=question,
        answer=answer,
        adversarial_answer=None,
        choices=tuple(choices),
        correct_choice_index=correct,
        question_date_raw=None,
        question_date=None,
        is_abstention=label == MC10_ADVERSARIAL_LABEL,
        haystack_id=hid,
    )
    unique = tuple({s.session.session_key: s for s in sessions}.values())
    return ParsedRecord(row, unique, haystack, (), ctx.take_issues())


def _choices(ctx: RecordContext, obj: Mapping[str, Any], answer: str) -> tuple[list[str], int]:
    choices = [c if isinstance(c, str) else answer_text(c, "choices[]", ctx) for c in required(obj, "choices", list)]
    correct = required(obj, "correct_choice_index", int)
    if not 0 <= correct < len(choices):
        raise RecordError("correct_choice_index", f"{correct} is outside 0..{len(choices) - 1}")
    if len(choices) != EXPECTED_CHOICES:
        ctx.issue("choice_count", "choices", str(len(choices)), "kept")
    declared = optional(obj, "num_choices", int)
    if declared is not None and declared != len(choices):
        ctx.issue("num_choices_mismatch", "num_choices", str(declared), f"ignored; {len(choices)} choices given")
    if choices[correct].strip() != answer.strip():
        ctx.issue("answer_not_in_choices", "correct_choice_index", choices[correct], "kept; correct_choice_index wins")
    return choices, correct


def _sessions(ctx: RecordContext, obj: Mapping[str, Any]) -> list[SessionWithTurns]:
    ids = string_list(obj, "haystack_session_ids")
    dates = string_list(obj, "haystack_session_datetimes")
    raw_sessions = required(obj, "haystack_sessions", list)
    summaries = optional(obj, "haystack_session_summaries", list) or [None] * len(ids)
    same_length("haystack_session_ids", ids, "haystack_session_datetimes", dates)
    same_length("haystack_session_ids", ids, "haystack_sessions", raw_sessions)
    same_length("haystack_session_ids", ids, "haystack_session_summaries", summaries)
    declared = optional(obj, "num_sessions", int)
    if declared is not None and declared != len(ids):
        ctx.issue("num_sessions_mismatch", "num_sessions", str(declared), f"ignored; {len(ids)} sessions given")
    speakers: dict[str, str] = {}
    sessions = []
    for i, (sid, date_raw, raw, summary) in enumerate(zip(ids, dates, raw_sessions, summaries, strict=True)):
        check_type(summary, (str, type(None)), f"haystack_session_summaries[{i}]")
        when = parse_iso_datetime(date_raw)
        if when is None:
            ctx.issue("unparseable_date", f"haystack_session_datetimes[{i}]", date_raw, "raw kept, parsed date NULL")
        turns = _turns(ctx, raw, f"haystack_sessions[{i}]", speakers)
        sessions.append(build_session(ctx.dataset, sid, date_raw, when, summary, turns))
    return sessions


def _turns(ctx: RecordContext, raw: Any, path: str, speakers: dict[str, str]) -> list[TurnSpec]:
    check_type(raw, list, path)
    turns = []
    for j, item in enumerate(raw):
        tpath = f"{path}[{j}]."
        turn = as_object(item, f"{path}[{j}]")
        speaker = required(turn, "role", str, tpath)
        text = required(turn, "content", str, tpath)
        role = speaker if speaker in ROLES else _speaker_role(ctx, speaker, speakers, tpath)
        if not text.strip():
            ctx.issue("empty_turn", f"{tpath}content", text, "kept as empty text (positions preserved)")
        turns.append(TurnSpec(speaker, role, text, False))
    return turns


def _speaker_role(ctx: RecordContext, speaker: str, speakers: dict[str, str], tpath: str) -> str:
    """A speaker name in ``role``: the first name met is the user, the second the assistant."""
    if speaker not in speakers:
        if len(speakers) >= len(ROLES):
            raise RecordError(f"{tpath}role", f"third distinct speaker {speaker!r} in one haystack")
        speakers[speaker] = ROLES[len(speakers)]
        ctx.issue("speaker_as_role", f"{tpath}role", speaker, f"mapped to role {speakers[speaker]!r}")
    return speakers[speaker]
