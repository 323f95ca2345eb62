"""``notes``: an LLM note-taker that reads the haystack session by session, then dense retrieval.

Why: the memory-agent design of LongMemEval-style systems (seed 002) writes concise, dated notes
while the conversation happens, instead of indexing raw turns. Each session is one LLM call
(prompt below, a module constant so its text is versioned with the code and part of the cache
key); each returned line becomes a ``note`` unit linked to its session and to the turns it cites.
Sessions are independent calls (no previous notes in the prompt): a shared session (LongMemEval_S)
then costs one call across all haystacks through the LLM cache, and a resumed ingestion produces
exactly the notes an uninterrupted one would. A failed call raises, so the ingestion unit fails
at that session and the next run resumes there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from pipeline.core.records import QuestionRow, TurnRow
from pipeline.llm.identity import not_set
from pipeline.llm.protocol import ChatClient
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult
from pipeline.memory.context import ORDER_TIME, format_date, ranked_result
from pipeline.memory.params import MemoryConfigError, ParamsInput, SystemParams
from pipeline.memory.units import KIND_NOTE
from pipeline.memory.vector import VectorMemory
from pipeline.store.corpus import HaystackSession

KIND = "notes"

NOTES_SYSTEM_PROMPT = """\
You are the note-taking memory of a long-running conversation. You read one conversation \
session at a time and write down the facts worth remembering to answer questions later: facts \
about the user and every person mentioned (events, plans, preferences, possessions, \
relationships, opinions, and changes to something said before), and facts the assistant stated \
that the user may ask about again.

Rules:
- Write one note per line, in the form: [turns: <turn numbers, comma-separated>] <note>
- A note is one short, self-contained factual sentence that names who it is about.
- Begin the note with the date the fact refers to (YYYY-MM-DD, or the month/year when that is all \
that is known); resolve relative dates such as "yesterday" or "last week" against the session date.
- Cite the bracketed turn numbers of the transcript lines the note is based on.
- Never add anything that the transcript does not say.
- If the session contains nothing worth remembering, reply with exactly: NONE"""

NOTES_USER_TEMPLATE = """\
Session date: {date}

Transcript:
{transcript}

Notes:"""

_NOTE_LINE = re.compile(r"^\[\s*turns?\s*:?\s*([^\]]*)\]\s*(.+)$", re.IGNORECASE)
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
NONE_REPLY = "NONE"


class NotesParams(SystemParams):
    top_k: int = Field(default=20, gt=0)
    order: Literal["time", "rank"] = ORDER_TIME
    token_budget: int | None = Field(default=8_000, gt=0)
    model: str | None = None  # None = the config's llm.model
    max_tokens: int = Field(default=1_024, gt=0)  # a long session yields a few dozen notes


class NotesCallFailed(RuntimeError):
    """The LLM call for a session failed or returned nothing: ingestion stops at that session."""


def transcript_line(turn: TurnRow) -> str:
    text = f"[{turn.position}] {turn.speaker}: {turn.text}"
    return text + (f" [shares an image: {turn.caption}]" if turn.caption else "")


def notes_messages(session: HaystackSession) -> list[dict[str, str]]:
    """The chat messages for one session (system prompt + dated transcript)."""
    date = session.session.datetime_raw or format_date(session.session.datetime)
    transcript = "\n".join(transcript_line(t) for t in session.turns)
    return [
        {"role": "system", "content": NOTES_SYSTEM_PROMPT},
        {"role": "user", "content": NOTES_USER_TEMPLATE.format(date=date, transcript=transcript)},
    ]


def parse_notes(reply: str, turn_ids: Mapping[int, str]) -> list[tuple[str, tuple[str, ...]]]:
    """Reply lines -> (note, cited turn ids). Untagged lines are kept as notes citing no turn;
    cited numbers that are not turns of the session are dropped (the note stays session-level)."""
    notes: list[tuple[str, tuple[str, ...]]] = []
    for raw in reply.splitlines():
        line = _BULLET.sub("", raw.strip()).strip()
        if not line or line.upper().rstrip(".") == NONE_REPLY or line.lower() == "notes:":
            continue
        match = _NOTE_LINE.match(line)
        if not match:
            notes.append((line, ()))
            continue
        cited = [int(n) for n in re.findall(r"\d+", match.group(1))]
        ids = tuple(dict.fromkeys(turn_ids[n] for n in cited if n in turn_ids))
        notes.append((match.group(2).strip(), ids))
    return notes


class NotesMemory(VectorMemory[NotesParams]):
    """LLM-written notes per session; top-k notes by cosine to the question."""

    params_model = NotesParams
    version = 1
    kind = KIND
    uses_llm = True

    @classmethod
    def llm_fields(cls, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The ``llm:`` settings its calls take (pipeline/llm/identity.py): the model unless its params
        name one, the temperature and the tag (its reply cap is its own ``max_tokens``)."""
        return (*not_set(params, "model"), "temperature", "model_tag")

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        if deps.llm is None:
            raise MemoryConfigError(
                f"memory system kind {KIND!r} needs an LLM, but the benchmark config has no `llm:` "
                "block (base_url, model); add one or remove this system from memory_systems"
            )
        super().__init__(params, deps)
        self.llm: ChatClient = deps.llm
        self.log = deps.log

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        if not session.turns:
            return []
        reply = self.llm.chat(notes_messages(session), model=self.params.model, max_tokens=self.params.max_tokens)
        where = f"session {session.session.source_session_id!r} (position {session.position})"
        if not reply.ok or reply.text is None:  # ok=False <=> text is None (LLMReply)
            raise NotesCallFailed(f"LLM call for {where} failed: {reply.error}")
        if not reply.text.strip():
            raise NotesCallFailed(f"LLM returned an empty reply for {where}")
        turn_ids = {t.position: t.turn_id for t in session.turns}
        added = [
            MemoryUnit(
                unit_id=f"{session.session.session_key}#note{i}",
                haystack_id=haystack_id,
                session_key=session.session.session_key,
                session_position=session.position,
                turn_ids=cited,
                text=text,
                timestamp=session.session.datetime,
                role="note",
                kind=KIND_NOTE,
            )
            for i, (text, cited) in enumerate(parse_notes(reply.text, turn_ids))
        ]
        self.index.add(added)
        return added

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        ranked = self.index.search(question.question, self.params.top_k)
        notes = {"top_k": self.params.top_k, "index_units": len(self.index)}
        return ranked_result(ranked, self.params.token_budget, self.params.order, self.index.order, notes)
