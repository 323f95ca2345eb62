"""``locomo_full_context``: LoCoMo's full-context packing on a hand-checked conversation.

Token counts (pinned regex_word_punct: words and single punctuation marks):
- a turn ``Ann said, "c d"`` + newline = Ann, said, ",", '"', c, d, '"' = 7 (one-word text: 6);
- a header ``DATE: d2`` / ``CONVERSATION:`` = DATE, :, d2, CONVERSATION, : = 5.
Q = tokens of the question prompt + start prompt (protocol text, counted the same way). The walk
(newest session, last turn first) checks header + turn + context so far + Q < limit:
f 5+6+0, e 5+6+6, "c d" 5+7+12 (then the d2 header: context 24), b 5+6+24, a 5+6+30.
"""

from __future__ import annotations

import datetime as dt

import pytest

from pipeline.core.records import SessionRow, TurnRow
from pipeline.core.tokens import count_tokens
from pipeline.kinds.memory import MEMORY_SYSTEMS
from pipeline.memory.base import MemoryDeps
from pipeline.memory.locomo_full_context import (
    KIND,
    LOCOMO_CONV_START_PROMPT,
    LocomoFullContextMemory,
    question_prompt,
)
from pipeline.store.corpus import HaystackSession
from tests.support.judges import locomo

CONVERSATION = [("d1", [("Ann", "a"), ("Ben", "b")]), ("d2", [("Ann", "c d"), ("Ben", "e"), ("Ann", "f")])]
START = LOCOMO_CONV_START_PROMPT.format("Ann", "Ben")
H1, H2 = "DATE: d1\nCONVERSATION:\n", "DATE: d2\nCONVERSATION:\n"
A, B, CD, E, F = ('Ann said, "a"\n', 'Ben said, "b"\n', 'Ann said, "c d"\n', 'Ben said, "e"\n', 'Ann said, "f"\n')


def _sessions() -> list[HaystackSession]:
    out = []
    for pos, (date, turns) in enumerate(CONVERSATION):
        key = f"s{pos}"
        rows = tuple(
            TurnRow("loc", key, f"{key}:{i}", i, spk, "user", text, False, f"D{pos + 1}:{i + 1}")
            for i, (spk, text) in enumerate(turns)
        )
        session = SessionRow("loc", key, f"session_{pos + 1}", date, dt.datetime(2023, 5, pos + 1), None, len(rows))
        out.append(HaystackSession(pos, session, rows))
    return out


def _memory(limit_over_q: int) -> tuple[LocomoFullContextMemory, object]:
    q = locomo("1", "x", text="What did Ann say?")
    q_tokens = count_tokens(question_prompt(q.question, "1", None)) + count_tokens(START)
    mem = LocomoFullContextMemory({"window": q_tokens + limit_over_q + 50}, MemoryDeps(encoder=None))
    for s in _sessions():
        mem.ingest_session("c1", s)
    return mem, q


def test_token_counts_of_the_hand_table() -> None:
    assert [count_tokens(x) for x in (A, CD, H1)] == [6, 7, 5]


@pytest.mark.parametrize(
    ("limit_over_q", "context", "kept"),
    [
        # limit Q + 30: f (11), e (17), "c d" (24) fit; b needs 35: stop inside session 1, its header stays;
        # every visited session appends two newlines at the end, as the official string building does
        (30, START + H1 + H2 + CD + E + F + "\n\n\n\n", ["s1:0", "s1:1", "s1:2"]),
        # limit Q + 24: "c d" needs exactly 24, not < 24: stop inside session 2
        (24, START + H2 + E + F + "\n\n", ["s1:1", "s1:2"]),
        # limit Q + 42: a needs 41: everything fits, sessions in time order
        (42, START + H1 + A + B + H2 + CD + E + F + "\n\n\n\n", ["s0:0", "s0:1", "s1:0", "s1:1", "s1:2"]),
        # nothing fits: the newest session's header only
        (5, START + H2 + "\n\n", []),
    ],
)
def test_packs_the_most_recent_turns_that_fit(limit_over_q: int, context: str, kept: list[str]) -> None:
    mem, q = _memory(limit_over_q)
    result = mem.retrieve(q)  # type: ignore[arg-type]
    assert result.context == context
    assert [u.unit_id for u in result.units] == kept and [u.rank for u in result.units] == list(range(1, len(kept) + 1))
    assert result.trimmed_units == 5 - len(kept) and result.notes["units_total"] == 5
    assert result.context_tokens == count_tokens(context)


def test_restored_memory_packs_the_same() -> None:
    mem, q = _memory(30)
    again = LocomoFullContextMemory({"window": mem.params.window}, MemoryDeps(encoder=None))
    again.restore(list(mem.units))
    assert again.retrieve(q).context == mem.retrieve(q).context  # type: ignore[arg-type]


def test_registered_and_question_forms() -> None:
    assert MEMORY_SYSTEMS.get(KIND) is LocomoFullContextMemory
    hint = "0: When? Use DATE of CONVERSATION to answer with an approximate date."
    assert question_prompt("When?", "2", None).endswith(hint)
    cat5 = question_prompt("Why?", "5", "a dog")
    assert cat5.endswith("0: Why? Select the correct answer: (a) Not mentioned in the conversation (b) a dog. ")
