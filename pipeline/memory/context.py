"""The context string handed to a reader: dated session blocks, trimmed to a token budget.

Why one module: every memory system must present its units the same way (session date first, so
temporal questions are answerable) and must count what a budget cut away, or two systems'
answers would differ by formatting rather than by memory. Token counts use the pinned
``regex_word_punct`` definition (pipeline.core.tokens); it is additive over pieces joined by
whitespace, which lets the budget be applied piece by piece and still match the final count.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pipeline.core.tokens import TOKEN_PATTERN, count_each, count_tokens, note_count
from pipeline.memory.base import MemoryUnit, RetrievalResult, RetrievedUnit

ORDER_TIME: Final = "time"  # grouped by session, oldest first (how a conversation reads)
ORDER_RANK: Final = "rank"  # best match first, each unit prefixed with its session and date

_DATE_FORMAT = "%Y-%m-%d (%a) %H:%M"
COUNTED_TOGETHER = 32  # units whose token counts the budget takes in one pass (it keeps ~25-100)


def format_date(ts: dt.datetime | None) -> str:
    return ts.strftime(_DATE_FORMAT) if ts is not None else "date unknown"


def session_header(unit: MemoryUnit) -> str:
    """``[Session 3 | 2023-05-08 (Mon) 13:56]``: 1-based position in the haystack and its date."""
    return f"[Session {unit.session_position + 1} | {format_date(unit.timestamp)}]"


def rank_line(unit: MemoryUnit) -> str:
    return f"[{format_date(unit.timestamp)} | session {unit.session_position + 1}] {unit.text}"


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The prefix of ``text`` holding at most ``max_tokens`` tokens (cut after a whole token)."""
    if max_tokens <= 0:
        return ""
    for i, match in enumerate(TOKEN_PATTERN.finditer(text)):
        if i == max_tokens - 1:
            return text[: match.end()]
    return text


def render(units: Sequence[MemoryUnit], order: str) -> str:
    """Units as context text; ``time`` groups consecutive units of one session under its header."""
    if order == ORDER_RANK:
        return "\n".join(rank_line(u) for u in units)
    lines: list[str] = []
    current: tuple[str, int] | None = None
    for u in units:
        if (u.session_key, u.session_position) != current:
            current = (u.session_key, u.session_position)
            if lines:
                lines.append("")
            lines.append(session_header(u))
        lines.append(u.text)
    return "\n".join(lines)


def time_sorted(units: Sequence[MemoryUnit], position: dict[str, int]) -> list[MemoryUnit]:
    """Units in haystack order; ``position`` = unit_id -> index in ingestion order (tie-break)."""
    return sorted(units, key=lambda u: (u.session_position, position.get(u.unit_id, 0)))


@dataclass(frozen=True)
class FittedContext:
    units: tuple[MemoryUnit, ...]  # the units kept, in the order given (not yet re-ordered)
    trimmed_units: int  # units dropped whole by the budget
    truncated: bool  # the single kept unit was cut to fit (only when nothing else fits)
    tokens: int | None = None  # the rendered context's count, known when the budget summed it


def _cost(unit: MemoryUnit, order: str, seen: set[tuple[str, int]]) -> int:
    if order == ORDER_RANK:
        return count_tokens(rank_line(unit))
    cost = count_tokens(unit.text)
    if (unit.session_key, unit.session_position) not in seen:
        cost += count_tokens(session_header(unit))
    return cost


def _counted(priority: Sequence[MemoryUnit], order: str) -> Iterator[tuple[MemoryUnit, int, int]]:
    """Each unit with the tokens of its text and of its session's header (``_cost``'s two parts; in
    rank order the whole line and 0), counted ``COUNTED_TOGETHER`` units at a time (``count_each``).
    A session's header is the one of its first unit in ``priority`` order, made and counted once."""
    headers: dict[tuple[str, int], int] = {}
    for start in range(0, len(priority), COUNTED_TOGETHER):
        chunk = priority[start : start + COUNTED_TOGETHER]
        if order == ORDER_RANK:
            yield from zip(chunk, count_each([rank_line(u) for u in chunk]), [0] * len(chunk), strict=True)
            continue
        keys = [(u.session_key, u.session_position) for u in chunk]
        new = {key: u for key, u in reversed(list(zip(keys, chunk, strict=True))) if key not in headers}  # first unit
        counts = count_each([u.text for u in chunk] + [session_header(u) for u in new.values()])
        headers.update(zip(new, counts[len(chunk) :], strict=True))
        yield from zip(chunk, counts[: len(chunk)], [headers[key] for key in keys], strict=True)


def fit_budget(priority: Sequence[MemoryUnit], budget: int | None, order: str) -> FittedContext:
    """Keep units in ``priority`` order while the rendered context stays within ``budget`` tokens.

    The first unit that does not fit ends the selection (lower-priority units are dropped whole,
    never skipped over, so "what was dropped" is always a suffix of the priority list). When not
    even the first unit fits, it is truncated to the budget rather than returning an empty context.
    """
    if budget is None:
        return FittedContext(tuple(priority), 0, False)  # nothing counted: the caller counts the render
    kept: list[MemoryUnit] = []
    seen: set[tuple[str, int]] = set()
    used = 0
    for unit, text_cost, header_cost in _counted(priority, order):
        key = (unit.session_key, unit.session_position)
        cost = text_cost + (header_cost if key not in seen else 0)
        if used + cost > budget:
            break
        kept.append(unit)
        seen.add(key)
        used += cost
    if kept or not priority:
        # the count is additive over the pieces (see the module docstring): ``used`` is the render's
        return FittedContext(tuple(kept), len(priority) - len(kept), False, used)
    first = priority[0]
    overhead = _cost(first, order, set()) - count_tokens(first.text)
    cut = _replace_text(first, truncate_to_tokens(first.text, budget - overhead))
    return FittedContext((cut,), len(priority) - 1, True)


def _replace_text(unit: MemoryUnit, text: str) -> MemoryUnit:
    return MemoryUnit(
        unit.unit_id, unit.haystack_id, unit.session_key, unit.session_position, unit.turn_ids,
        text, unit.timestamp, unit.role, unit.kind,
    )  # fmt: skip


def retrieved(unit: MemoryUnit, rank: int, score: float | None = None, column: str = "semantic") -> RetrievedUnit:
    """A ranked unit for the ``retrievals`` table, its score in ``column`` (``semantic`` or ``bm25``)."""
    if column == "bm25":
        return RetrievedUnit(unit.unit_id, rank, unit.session_key, unit.turn_ids, unit.text, bm25=score)
    if column != "semantic":
        raise ValueError(f"a single-channel score goes in 'semantic' or 'bm25', not {column!r}")
    return RetrievedUnit(unit.unit_id, rank, unit.session_key, unit.turn_ids, unit.text, semantic=score)


def ranked_result(
    ranked: Sequence[tuple[MemoryUnit, float]],
    budget: int | None,
    order: str,
    positions: dict[str, int],
    notes: dict[str, Any],
    score_column: str = "semantic",
) -> RetrievalResult:
    """Ranked hits -> result: every hit listed with its score, the context cut to ``budget``.

    The ``units`` column keeps all ranked hits (retrieval metrics at k need them, even the ones the
    budget cut); ``trimmed_units`` says how many of them did not reach the reader. ``score_column``:
    the column of ``retrievals.units`` that holds the scores.
    """
    fitted = fit_budget([u for u, _ in ranked], budget, order)
    shown = time_sorted(fitted.units, positions) if order == ORDER_TIME else list(fitted.units)
    context = render(shown, order)

    def at_depth(cutoff: int) -> RetrievalResult:  # the first ``cutoff`` hits, rendered the same way
        return ranked_result(ranked[:cutoff], budget, order, positions, {**notes, "cutoff": cutoff}, score_column)

    if fitted.tokens is None:
        tokens = count_tokens(context)
    else:
        tokens = fitted.tokens
        note_count(context, tokens)  # the stored row counts it again (pipeline/memory/retrieve.py)
    return RetrievalResult(
        units=tuple(retrieved(u, rank, s, score_column) for rank, (u, s) in enumerate(ranked, start=1)),
        context=context,
        context_tokens=tokens,
        trimmed_units=fitted.trimmed_units,
        notes={
            **notes,
            "order": order,
            "token_budget": budget,
            "trimmed": "lowest-ranked units first",
            "truncated_unit": fitted.truncated,
        },
        at_depth=at_depth,
    )
