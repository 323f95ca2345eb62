"""LoCoMo-Plus loader (xjtuleeyf/Locomo-Plus ``data/``): its 401 "Cognitive" items, each stitched
into a LoCoMo conversation as the official ``data/unified_input.py`` stitches them.

Inputs: ``locomo_plus.json`` (a list of ``{relation_type, cue_dialogue, trigger_query, time_gap,
...}``) and ``locomo10.json``. ``path`` is ``locomo_plus.json`` or a folder holding it (the
official ``data/`` layout); ``locomo10.json`` is read from the same folder, else from its parent
(the layout of ../shared/datasets).

The stitching, as ``build_conv.build_context`` (called by ``unified_input.py``) does it:
- item ``i`` goes into conversation ``i mod 10`` (the file order of ``locomo10.json``);
- the conversation's sessions are ``session_1``, ``session_2``, ... up to the first missing number,
  each at its ``session_<n>_date_time``;
- ``A:`` / ``B:`` lines of ``cue_dialogue`` and ``trigger_query`` become turns of ``speaker_a`` /
  ``speaker_b`` (text after the prefix, stripped; other lines are dropped);
- the query is placed 7 days after the last session; the cue ``time_gap`` before it (the first
  "<n> week(s)|month(s)|year(s)" in the text, n a number, a word one..twelve, "a" or "an"; a week is
  7 days, a month 30, a year 365; a gap without one, e.g. "several months later", is 0 days);
- sessions, the cue and the query are ordered by time, a stable sort (a tie keeps the session
  first, then the cue, then the query).

Canonical form: one question per item, ``question_id = <sample_id>_plus<i>``, its own haystack
(``haystack_id`` = the question id): the conversation's sessions (stored once, content-keyed, the
same sessions as the ``locomo`` loader's) with the cue as a session of its own
(``source_session_id = cue``, dated at the cue time) in its sorted place. The trigger query is
the question, rendered as the official input renders the dialogue (``<speaker> said, "<text>"``,
one line per turn), asked at the query time (``question_date``). LoCoMo-Plus has no reference
answer: ``answer`` holds what its judge compares the reply with, the cue dialogue as the official
evidence text (``<speaker>：<text>`` with a full-width colon, one line per non-empty turn).
``type_raw`` = ``type_name`` = ``relation_type`` (the official summary has one category,
"Cognitive"). Evidence: the cue turns and the cue session.

Quirks counted (``data_quality.kind``): ``time_gap_unparsed`` (0 days, as the official code),
``dialogue_line_dropped`` (a cue / query line not starting with ``A:`` or ``B:``),
``empty_cue_dialogue``, ``session_after_gap`` (sessions after a missing number, not stitched, as
the official code stops there), ``session_after_query`` (a session dated after the query: the
official dialogue puts it after the query; here it stays in the haystack), and the LoCoMo
conversation's own quirks (pipeline.datasets.locomo), once per conversation.
Record-level failures: an item without ``cue_dialogue``, ``trigger_query`` (or no A:/B: line in it)
or ``time_gap``; a conversation whose session dates cannot be parsed (the official code raises).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.partitions import KeyRegistry
from pipeline.core.records import (
    LEVEL_SESSION,
    LEVEL_TURN,
    EvidenceRow,
    HaystackRow,
    ParsedRecord,
    QuestionRow,
    SessionWithTurns,
)
from pipeline.datasets.base import DatasetFileError, KeyConflict, RecordContext, RecordError, unknown_id
from pipeline.datasets.dates import format_locomo, parse_locomo_datetime
from pipeline.datasets.fields import as_object, required
from pipeline.datasets.locomo import parse_conversation
from pipeline.datasets.sessions import TurnSpec, build_session
from pipeline.datasets.sources import iter_json_array

PLUS_FILE = "locomo_plus.json"
LOCOMO_FILE = "locomo10.json"
CUE_SESSION = "cue"
QUERY_AFTER_DAYS = 7
DAYS_PER_UNIT = {"week": 7, "month": 30, "year": 365}
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a": 1, "an": 1,
}  # fmt: skip
_GAP = re.compile(
    r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|an?)\b\s*(week|month|year)s?\b"
)
SPEAKER_PREFIXES = ("A:", "B:")
EVIDENCE_COLON = "\uff1a"  # the full-width colon of the official evidence text


def locate(path: Path) -> tuple[Path, Path]:
    """(locomo_plus.json, locomo10.json) for a dataset ``path`` (the file or its folder)."""
    plus = path / PLUS_FILE if path.is_dir() else path
    if not plus.is_file():
        raise DatasetFileError(plus, "file not found (LoCoMo-Plus: locomo_plus.json or a folder holding it)")
    for folder in (plus.parent, plus.parent.parent):
        if (folder / LOCOMO_FILE).is_file():
            return plus, folder / LOCOMO_FILE
    raise DatasetFileError(
        plus, f"{LOCOMO_FILE} not found beside it or in its parent folder (LoCoMo-Plus stitches into it)",
        field=LOCOMO_FILE,
    )  # fmt: skip


def source_files(path: Path) -> list[Path]:
    """The two files a conversion reads."""
    return list(locate(path))


def time_gap_days(time_gap: str) -> int | None:
    """Days the cue lies before the query; None when the text names no amount (0 days then)."""
    m = _GAP.search(time_gap.lower().strip())
    if m is None:
        return None
    number, unit = m.groups()
    count = int(number) if number.isdigit() else _NUMBER_WORDS[number]
    return count * DAYS_PER_UNIT[unit]


@dataclass(frozen=True)
class Line:
    speaker: str
    text: str


def dialogue_lines(text: str, speaker_a: str, speaker_b: str) -> tuple[list[Line], int]:
    """The ``A:`` / ``B:`` lines as (speaker name, stripped text), and how many other lines."""
    lines, dropped = [], 0
    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith(SPEAKER_PREFIXES):
            lines.append(Line(speaker_a if line.startswith("A:") else speaker_b, line[2:].strip()))
        elif line:
            dropped += 1
    return lines, dropped


@dataclass(frozen=True)
class Stitched:
    """One conversation ready for stitching: its sessions in number order and their times."""

    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[SessionWithTurns, ...]
    times: tuple[dt.datetime, ...]


def load_locomo_plus(path: Path, dataset: str) -> Generator[ParsedRecord, None, None]:
    """Yield one ParsedRecord per LoCoMo-Plus item."""
    plus_file, locomo_file = locate(path)
    conversations = [raw for _, raw in iter_json_array(locomo_file)]
    if not conversations:
        raise DatasetFileError(locomo_file, "no conversation to stitch into", field="<top level>")
    keys = KeyRegistry(dataset)
    prepared: dict[int, Stitched | RecordError] = {}
    for index, raw in iter_json_array(plus_file):
        ctx = RecordContext(dataset, str(plus_file), index, unknown_id(index))
        target = index % len(conversations)
        if target not in prepared:
            prepared[target] = _prepare(ctx, conversations[target], locomo_file, target)
        yield _item(ctx, raw, prepared[target], keys)


def _prepare(ctx: RecordContext, raw: Any, locomo_file: Path, index: int) -> Stitched | RecordError:
    """The conversation's sessions 1..n (up to the first gap) and their parsed times; its quirks
    ride on the first item stitched into it."""
    try:
        obj = as_object(raw, f"{LOCOMO_FILE}[{index}]")
        sample_id = required(obj, "sample_id", str, f"{LOCOMO_FILE}[{index}].")
        conv = parse_conversation(ctx, obj, sample_id)
        speakers = (
            required(obj["conversation"], "speaker_a", str, "conversation."),
            required(obj["conversation"], "speaker_b", str, "conversation."),
        )
    except RecordError as err:
        return RecordError(f"{locomo_file.name}[{index}].{err.field}", err.message)
    sessions: list[SessionWithTurns] = []
    times: list[dt.datetime] = []
    for number, session in enumerate(conv.sessions, start=1):
        if session.session.source_session_id != f"session_{number}":
            rest = len(conv.sessions) - len(sessions)
            ctx.issue("session_after_gap", f"{sample_id}.session_{number}", "<missing>", "not stitched", rest)
            break
        when = parse_locomo_datetime(session.session.datetime_raw or "")
        if when is None:
            field = f"{locomo_file.name}[{index}].conversation.session_{number}_date_time"
            return RecordError(field, f"date {session.session.datetime_raw!r} not in the LoCoMo form")
        sessions.append(session)
        times.append(when)
    if not sessions:
        return RecordError(f"{locomo_file.name}[{index}].conversation", "no session_1 to stitch into")
    return Stitched(sample_id, speakers, tuple(sessions), tuple(times))


def _item(ctx: RecordContext, raw: Any, conv: Stitched | RecordError, keys: KeyRegistry) -> ParsedRecord:
    if isinstance(conv, RecordError):
        return ctx.failure(conv, None)
    qid = f"{conv.sample_id}_plus{ctx.index}"
    ctx.record_id = qid
    try:
        key = ctx.key_for(keys, qid)
    except KeyConflict as err:
        return ctx.conflict_failure(err)
    try:
        return _stitch(ctx, as_object(raw, "<record>"), conv, qid, key)
    except RecordError as err:
        return ctx.failure(err, key)


def _stitch(ctx: RecordContext, obj: Mapping[str, Any], conv: Stitched, qid: str, key: str) -> ParsedRecord:
    relation = required(obj, "relation_type", str)
    cue_text = required(obj, "cue_dialogue", str)
    query_text = required(obj, "trigger_query", str)
    gap_text = required(obj, "time_gap", str)
    cue, cue_dropped = dialogue_lines(cue_text, *conv.speakers)
    query, query_dropped = dialogue_lines(query_text, *conv.speakers)
    if not query:
        raise RecordError("trigger_query", "no line starting with 'A:' or 'B:'")
    dropped_lines = (("cue_dialogue", cue_dropped, cue_text), ("trigger_query", query_dropped, query_text))
    for field, dropped, given in dropped_lines:
        if dropped:
            ctx.issue("dialogue_line_dropped", field, given, "dropped (neither 'A:' nor 'B:')", dropped)
    if not cue:
        ctx.issue("empty_cue_dialogue", "cue_dialogue", cue_text, "no cue turns; evidence empty")
    days = time_gap_days(gap_text)
    if days is None:
        ctx.issue("time_gap_unparsed", "time_gap", gap_text, "0 days: the cue sits at the query time (official)")
    query_time = conv.times[-1] + dt.timedelta(days=QUERY_AFTER_DAYS)
    cue_time = query_time - dt.timedelta(days=days or 0)
    late = sum(t > query_time for t in conv.times)
    if late:
        ctx.issue("session_after_query", "conversation", str(late), "kept in the haystack before the question")
    roles = {conv.speakers[0]: "user", conv.speakers[1]: "assistant"}
    cue_raw = format_locomo(cue_time)
    cue_session = build_session(
        ctx.dataset, CUE_SESSION, cue_raw, cue_time, None, [TurnSpec(t.speaker, roles[t.speaker], t.text, False)
                                                          for t in cue]
    )  # fmt: skip
    # sessions, then the cue, sorted by time, stable: a tie keeps the earlier-listed event first
    events = [*zip(conv.times, conv.sessions, strict=True), (cue_time, cue_session)]
    ordered = [s for _, s in sorted(events, key=lambda e: e[0])]
    haystack = tuple(
        HaystackRow(ctx.dataset, qid, i, s.session.session_key, s.session.source_session_id)
        for i, s in enumerate(ordered)
    )
    skey = cue_session.session.session_key
    evidence = tuple(
        EvidenceRow(ctx.dataset, qid, key, LEVEL_TURN, t.turn_id, f"{CUE_SESSION}:{t.position}")
        for t in cue_session.turns
    )
    if evidence:
        evidence += (EvidenceRow(ctx.dataset, qid, key, LEVEL_SESSION, skey, CUE_SESSION),)
    row = QuestionRow(
        dataset=ctx.dataset,
        question_id=qid,
        partition_key=key,
        record_index=ctx.index,
        type_raw=relation,
        type_name=relation,
        question="\n".join(f'{t.speaker} said, "{t.text}"' for t in query),
        answer="\n".join(f"{t.speaker}{EVIDENCE_COLON}{t.text}" for t in cue if t.text),
        adversarial_answer=None,
        choices=None,
        correct_choice_index=None,
        question_date_raw=format_locomo(query_time),
        question_date=query_time,
        is_abstention=False,
        haystack_id=qid,
    )
    unique = tuple({s.session.session_key: s for s in ordered}.values())
    return ParsedRecord(row, unique, haystack, evidence, ctx.take_issues())
