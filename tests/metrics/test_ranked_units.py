"""Rankings made from ``RankedUnits`` (units sorted once, as columns) equal the definitions as they
were written over ``UnitRef`` lists: each ranking sorting the units again and walking them.

The references below are those definitions verbatim; every level, with and without gold, on turn
units, multi-turn units, units without turns, repeated turns and ties in rank, and on the context
as a prefix (``head``) against the context taken from the UnitRefs (``context_units``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from operator import attrgetter

import pytest

from pipeline.core.records import LEVEL_SESSION, LEVEL_TURN
from pipeline.metrics.retrieval import (
    LEVEL_SESSION_DEDUP,
    LEVEL_SESSION_KEYED,
    LEVELS,
    NOANS_PREFIX,
    Gold,
    Ranked,
    RankedUnits,
    UnitRef,
    context_size,
    context_units,
    is_turn_ranking,
    ranked_units,
    ranking_at,
)

_BY_RANK = attrgetter("rank")


def _dedup(ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def _ref_turns_with_sessions(units: Sequence[UnitRef]) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for u in sorted(units, key=_BY_RANK):
        for t in u.turn_ids:
            seen.setdefault(t, u.session_key)
    return list(seen.items())


def _ref_ranking_at(level: str, units: Sequence[UnitRef], gold: Gold | None) -> list[str] | Ranked:
    """ranking_at as it was: every ranking sorts the UnitRefs itself."""
    sessions = _dedup([u.session_key for u in sorted(units, key=_BY_RANK)])
    if level == LEVEL_TURN:
        return _dedup([t for u in sorted(units, key=_BY_RANK) for t in u.turn_ids])
    if level == LEVEL_SESSION_DEDUP:
        return sessions
    official = level == LEVEL_SESSION
    if gold is not None and bool(units) and all(len(u.turn_ids) == 1 for u in units):
        labels = []
        for turn_id, session in _ref_turns_with_sessions(units):
            name = gold.haystack_session_id(session) if official else session
            noans = turn_id not in gold.turns and session in gold.answer_sessions
            labels.append(NOANS_PREFIX + name if noans else name)
        return Ranked(tuple(labels), len(gold.turns))
    return [gold.haystack_session_id(s) for s in sessions] if (official and gold is not None) else sessions


def _random_units(rng: random.Random) -> list[UnitRef]:
    kind = rng.choice(("turns", "sessions", "mixed", "empty"))
    n = 0 if kind == "empty" else rng.randrange(1, 40)
    units = []
    for _ in range(n):
        session = f"s{rng.randrange(8)}"

        def turn(session: str = session) -> str:  # may repeat, even under another session: first appearance wins
            return f"{session if rng.random() < 0.7 else f's{rng.randrange(8)}'}:{rng.randrange(6)}"

        turns = (turn(),) if kind == "turns" else tuple(turn() for _ in range(rng.randrange(0, 4)))
        units.append(UnitRef(rng.randrange(1, 30), session, turns))  # ties in rank, any order
    return units


def _random_gold(rng: random.Random) -> Gold:
    sessions = frozenset(f"s{i}" for i in rng.sample(range(8), rng.randrange(0, 3)))
    answer = sessions | frozenset(f"s{i}" for i in rng.sample(range(8), rng.randrange(0, 2)))
    turns = frozenset(f"{s}:{rng.randrange(6)}" for s in sessions)
    ids = {s: f"id-{int(s[1:]) % 5}" for s in answer}  # two keys may share one haystack session id
    return Gold(turns, sessions, answer, ids)


def test_every_level_equals_the_unitref_definitions() -> None:
    rng = random.Random(3)
    for _ in range(1500):
        units, gold = _random_units(rng), rng.choice((None, _random_gold(rng)))
        ranked = RankedUnits.of(units)
        assert ranked_units(ranked) is ranked
        assert (
            is_turn_ranking(ranked)
            == is_turn_ranking(units)
            == (bool(units) and all(len(u.turn_ids) == 1 for u in units))
        )
        for level in LEVELS:
            want = _ref_ranking_at(level, units, gold)
            assert ranking_at(level, ranked, gold) == want == ranking_at(level, units, gold), (level, units, gold)


@pytest.mark.parametrize(("trimmed", "total"), [(0, None), (2, None), (99, None), (-1, None), (3, 10), (3, 99)])
def test_the_context_is_a_prefix_of_the_ranked_units(trimmed: int, total: int | None) -> None:
    """``head(context_size(...))`` = the units ``context_units`` keeps, as RankedUnits, and their rankings."""
    rng = random.Random(trimmed * 100 + (total or 0))
    for _ in range(300):
        units, gold = _random_units(rng), _random_gold(rng)
        kept = context_units(units, trimmed, total)
        head = RankedUnits.of(units).head(context_size(len(units), trimmed, total))
        assert head == RankedUnits.of(kept)
        for level in (LEVEL_TURN, LEVEL_SESSION, LEVEL_SESSION_KEYED):
            assert ranking_at(level, head, gold) == _ref_ranking_at(level, kept, gold)


@pytest.mark.parametrize(
    ("units", "expected"),
    [
        ([], RankedUnits([], [], [0])),
        (
            [UnitRef(2, "B", ("B:0", "B:1")), UnitRef(1, "A", ()), UnitRef(2, "C", ("C:3",))],
            RankedUnits(["A", "B", "C"], ["B:0", "B:1", "C:3"], [0, 0, 2, 3]),
        ),
    ],
    ids=["none", "sorted by rank, ties kept in order"],
)
def test_ranked_units_columns(units: list[UnitRef], expected: RankedUnits) -> None:
    ranked = RankedUnits.of(units)
    assert ranked == expected
    assert len(ranked) == len(units)
    assert ranked.head(len(ranked)) == ranked
    assert ranked.head(0) == RankedUnits([], [], [0])
