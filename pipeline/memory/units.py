"""Building memory units from haystack sessions (turns, session chunks).

Why shared: the unit ids are what retrieval metrics match against gold evidence (a turn unit's id
IS its ``turn_id``; a session unit carries its ``session_key``), so every system must mint them
the same way.
"""

from __future__ import annotations

from pipeline.core.records import TurnRow
from pipeline.core.tokens import count_tokens
from pipeline.memory.base import MemoryUnit, turn_unit_text
from pipeline.store.corpus import HaystackSession

KIND_TURN = "turn"
KIND_SESSION = "session"
KIND_SUMMARY = "summary"
KIND_NOTE = "note"


def turn_unit(haystack_id: str, hs: HaystackSession, turn: TurnRow) -> MemoryUnit:
    return MemoryUnit(
        unit_id=turn.turn_id,
        haystack_id=haystack_id,
        session_key=hs.session.session_key,
        session_position=hs.position,
        turn_ids=(turn.turn_id,),
        text=turn_unit_text(turn),
        timestamp=hs.session.datetime,
        role=turn.role,
        kind=KIND_TURN,
    )


def turn_units(haystack_id: str, hs: HaystackSession) -> list[MemoryUnit]:
    """One unit per turn of the session (turns already filtered to the dataset's index roles)."""
    return [turn_unit(haystack_id, hs, t) for t in hs.turns]


def session_unit(haystack_id: str, hs: HaystackSession, text: str, unit_id: str, kind: str) -> MemoryUnit:
    """A unit standing for a whole session (chunk, summary): role 'session', all its turn ids."""
    return MemoryUnit(
        unit_id=unit_id,
        haystack_id=haystack_id,
        session_key=hs.session.session_key,
        session_position=hs.position,
        turn_ids=tuple(t.turn_id for t in hs.turns),
        text=text,
        timestamp=hs.session.datetime,
        role="session",
        kind=kind,
    )


def chunk_turns(turns: tuple[TurnRow, ...], max_tokens: int) -> list[tuple[TurnRow, ...]]:
    """Consecutive turns packed into chunks of at most ``max_tokens`` tokens, split at turn ends.

    A single turn longer than the limit forms its own chunk (the encoder truncates it; MiniLM
    reads 256 word pieces): turns are never split, so a chunk's turn ids are exact.
    """
    chunks: list[tuple[TurnRow, ...]] = []
    current: list[TurnRow] = []
    used = 0
    for turn in turns:
        cost = count_tokens(turn_unit_text(turn))
        if current and used + cost > max_tokens:
            chunks.append(tuple(current))
            current, used = [], 0
        current.append(turn)
        used += cost
    if current:
        chunks.append(tuple(current))
    return chunks
