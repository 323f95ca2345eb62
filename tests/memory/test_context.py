"""The reader's context: the token count a budget sums is the rendered context's own count.

``ranked_result`` no longer counts the rendered context again when the budget already summed its
pieces (the count is additive over pieces joined by whitespace); these cases pin that the stored
``context_tokens`` is exactly ``count_tokens(context)`` in both orders, with a budget that cuts,
one that keeps everything, a truncated first unit and no budget.
"""

from __future__ import annotations

import datetime as dt
import random

import pytest

from pipeline.core.tokens import count_tokens
from pipeline.memory.base import MemoryUnit
from pipeline.memory.context import ORDER_RANK, ORDER_TIME, ranked_result

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
    assert result.context_tokens == count_tokens(result.context)
    cut = result.at_depth(2) if result.at_depth else None
    assert cut is not None and cut.context_tokens == count_tokens(cut.context)


def test_scores_go_to_the_named_column() -> None:
    ranked = _units(0, 3)
    bm25 = ranked_result(ranked, None, ORDER_TIME, {}, {}, "bm25")
    assert [u.bm25 for u in bm25.units] == [s for _, s in ranked] and {u.semantic for u in bm25.units} == {None}
    cut = bm25.at_depth(1) if bm25.at_depth else None
    assert cut is not None and cut.units[0].bm25 == ranked[0][1]
    with pytest.raises(ValueError, match="'semantic' or 'bm25'"):
        ranked_result(ranked, None, ORDER_TIME, {}, {}, "fused")
