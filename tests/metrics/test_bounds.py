"""The failures-as-wrong bound, cost per correct answer and order reversals: table-tested definitions."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.metrics.bounds import (
    failures_as_wrong,
    failures_as_wrong_sql,
    order_reversed,
    per_correct,
    per_correct_sql,
)


@pytest.mark.parametrize(
    ("credit", "n_scored", "n_unscored", "expected"),
    [
        (8, 10, 0, 0.8),  # nothing failed: the bound is the headline
        (8, 10, 10, 0.4),  # half the questions crashed: the bound halves
        (1.75, 3, 1, 0.4375),  # a mean score: the failed question scores 0
        (0, 0, 5, 0.0),  # every question failed: 0 correct of 5, a real 0
        (0, 0, 0, None),  # nothing at all: no number, never 0
    ],
)
def test_failures_as_wrong(credit: float, n_scored: int, n_unscored: int, expected: float | None) -> None:
    assert failures_as_wrong(credit, n_scored, n_unscored) == (None if expected is None else pytest.approx(expected))
    sql = failures_as_wrong_sql(str(credit), str(n_scored), str(n_unscored))
    [row] = duckdb.sql(f"SELECT {sql}").fetchall()
    assert row[0] == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(
    ("total", "n_correct", "expected"),
    [(1100, 2, 550.0), (0.04, 3, 0.04 / 3), (500, 0, None), (None, 4, None)],
)
def test_per_correct(total: float | None, n_correct: int, expected: float | None) -> None:
    assert per_correct(total, n_correct) == (None if expected is None else pytest.approx(expected))
    [row] = duckdb.sql(f"SELECT {per_correct_sql('NULL' if total is None else str(total), str(n_correct))}").fetchall()
    assert row[0] == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(
    ("values", "bounds", "reversed_"),
    [
        ((0.8, 0.7), (0.5, 0.6), True),  # A ahead on its scored questions, behind once failures count
        ((0.7, 0.8), (0.6, 0.5), True),
        ((0.8, 0.7), (0.7, 0.6), False),  # same order
        ((0.8, 0.7), (0.6, 0.6), False),  # a tie of the bounds is no order
        ((0.7, 0.7), (0.5, 0.6), False),  # a tie of the headlines is no order
        ((0.8, None), (0.5, 0.6), False),  # unknown: no claim
    ],
)
def test_order_reversed(values: tuple[float, float | None], bounds: tuple[float, float], reversed_: bool) -> None:
    assert order_reversed(values[0], values[1], bounds[0], bounds[1]) is reversed_
