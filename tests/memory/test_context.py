"""The reader's context: the token count a budget sums is the rendered context's own count.

``ranked_result`` no longer counts the rendered context again when the budget already summed its
pieces (the count is additive over pieces joined by whitespace); these cases pin that the stored
``context_tokens`` is exactly the pinned definition's count of the context (the regex itself, not
``count_tokens``, which serves a long context's noted count) in both orders, with a budget that
cuts, one that keeps everything, a truncated first unit and no budget.
"""

from __future__ import annotations

import datetime as dt
import random
import re

import pytest

from pipeline.core.tokens import KNOWN_MIN_CHARS, count_tokens, note_count
from pipeline.memory.base import MemoryUnit
from pipeline.memory.context import COUNTED_TOGETHER, ORDER_RANK, ORDER_TIME, ranked_result

PINNED = re.compile(r"\w+|[^\w\s]")  # regex_word_punct, counted here without any cache


def pinned_count(text: str) -> int:
    return len(PINNED.findall(text))


WORDS = ["I", "moved", "to", "Porto", "in", "May.", "don't", "5:30pm;", "(really)", "état", "--", "a,b", "x"]


def _units(seed: int, n: int) -> list[tuple[MemoryUnit, float]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        session = rng.randrange(4)
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 12)))
        when = None if session == 3 else dt.datetime(2023, 5, session + 1, 13, 56)
        unit = MemoryUnit(f"u{i}", "h", f"s{session}", session, (f"t{i}",), text, when, "user", "turn")
        out.append((unit, rng.random()))
    return out


@pytest.mark.parametrize("order", [ORDER_TIME, ORDER_RANK])
@pytest.mark.parametrize("budget", [None, 1, 3, 25, 80, 10_000])
@pytest.mark.parametrize("seed", range(12))
def test_context_tokens_are_the_rendered_contexts_count(order: str, budget: int | None, seed: int) -> None:
    ranked = _units(seed, 1 + seed * 3)
    positions = {u.unit_id: i for i, (u, _) in enumerate(ranked)}
    result = ranked_result(ranked, budget, order, positions, {})
    assert result.context_tokens == pinned_count(result.context) == count_tokens(result.context)
    cut = result.at_depth(2) if result.at_depth else None
    assert cut is not None and cut.context_tokens == pinned_count(cut.context)


def test_a_long_context_is_counted_once() -> None:
    """A context long enough to be remembered: its noted count is served, and it is the true count."""
    ranked = [(u, s) for u, s in _units(3, 3000) if u.text]
    result = ranked_result(ranked, 100_000, ORDER_TIME, {}, {})
    assert len(result.context) >= KNOWN_MIN_CHARS
    assert count_tokens(result.context) == result.context_tokens == pinned_count(result.context)


def test_only_long_texts_are_remembered_and_only_the_last_few() -> None:
    short = "a b c"
    note_count(short, 99)
    assert count_tokens(short) == 3
    long_texts = [f"w{i} " * KNOWN_MIN_CHARS for i in range(70)]
    for text in long_texts:
        note_count(text, 7)
    assert count_tokens(long_texts[-1]) == 7  # served as noted
    assert count_tokens(long_texts[0]) == KNOWN_MIN_CHARS  # evicted: counted again


def test_scores_go_to_the_named_column() -> None:
    ranked = _units(0, 3)
    bm25 = ranked_result(ranked, None, ORDER_TIME, {}, {}, "bm25")
    assert [u.bm25 for u in bm25.units] == [s for _, s in ranked] and {u.semantic for u in bm25.units} == {None}
    cut = bm25.at_depth(1) if bm25.at_depth else None
    assert cut is not None and cut.units[0].bm25 == ranked[0][1]
    with pytest.raises(ValueError, match="'semantic' or 'bm25'"):
        ranked_result(ranked, None, ORDER_TIME, {}, {}, "fused")


LONG_WORDS = ["I", "moved", "to", "Porto", "in", "May.", "don't", "5:30pm;", "(really)", "--", "a,b", "x_y", "\x1c", ""]


@pytest.mark.parametrize("order", [ORDER_TIME, ORDER_RANK])
@pytest.mark.parametrize("budget", [700, 3_000, 9_000, 100_000])
def test_a_budget_over_many_long_units_keeps_the_longest_prefix_that_fits(order: str, budget: int) -> None:
    """Many units counted several passes of ``COUNTED_TOGETHER`` at a time (long ASCII texts, an
    empty one, a non-ASCII one): what is kept is the longest prefix within the budget, its count
    the rendered context's own."""
    rng = random.Random(budget)
    ranked = []
    for i in range(5 * COUNTED_TOGETHER):
        session = rng.randrange(20)
        text = " ".join(rng.choice(LONG_WORDS) for _ in range(rng.randrange(0, 90))) + (" état" if i == 7 else "")
        when = None if session == 3 else dt.datetime(2023, 5, session + 1, 13, 56)
        ranked.append((MemoryUnit(f"u{i}", "h", f"s{session}", session, (f"t{i}",), text, when, "user", "turn"), 0.5))
    positions = {u.unit_id: i for i, (u, _) in enumerate(ranked)}
    result = ranked_result(ranked, budget, order, positions, {})
    kept = len(ranked) - result.trimmed_units
    assert result.context_tokens == pinned_count(result.context) <= budget
    assert pinned_count(ranked_result(ranked[:kept], None, order, positions, {}).context) == result.context_tokens
    if kept < len(ranked):  # the next unit would not have fitted
        assert pinned_count(ranked_result(ranked[: kept + 1], None, order, positions, {}).context) > budget
    assert (kept < len(ranked)) == (budget < 100_000)
