"""Wilson interval, McNemar exact test and percentiles: hand values, and the SQL macros agree."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.metrics.stats import install_macros, mcnemar_exact_p, percentile, wilson_interval

# successes, n, low, high; hand-computed: center (p + z²/2n) / (1 + z²/n),
# half-width z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n), z = 1.959964
WILSON = [
    (0, 10, 0.0, 0.277533),
    (5, 10, 0.236593, 0.763407),
    (10, 10, 0.722467, 1.0),
    (81, 100, 0.722212, 0.874852),
    (0, 1, 0.0, 0.793451),
    (1, 1, 0.206549, 1.0),
    (50, 100, 0.403832, 0.596168),
]

# b, c, p (exact: min(1, 2 * sum_{i<=min(b,c)} C(b+c, i) / 2^(b+c)))
MCNEMAR = [
    (0, 0, 1.0),  # no discordant pair: no evidence
    (1, 0, 1.0),  # 2 * 1/2
    (5, 0, 0.0625),  # 2 * 1/32
    (6, 1, 0.125),  # 2 * (1 + 7)/128
    (3, 7, 0.34375),  # 2 * (1 + 10 + 45 + 120)/1024
    (7, 3, 0.34375),  # symmetric
    (10, 0, 2 / 1024),
    (25, 25, 1.0),  # capped at 1
]

# values, q, expected (linear: h = (n-1)q, x[floor h] + frac(h) * (x[floor h + 1] - x[floor h]))
PERCENTILES = [
    ([5.0], 0.5, 5.0),
    ([5.0], 0.95, 5.0),
    ([1.0, 2.0, 3.0, 4.0], 0.5, 2.5),
    ([4.0, 1.0, 3.0, 2.0], 0.95, 3.85),  # h = 2.85 -> 3 + 0.85 * 1
    ([1.0, 2.0, 3.0, 4.0, 5.0], 0.5, 3.0),
    ([0.1, 0.2, 0.3, 0.4], 0.95, 0.385),
    ([1.0, 10.0], 0.0, 1.0),
    ([1.0, 10.0], 1.0, 10.0),
]


@pytest.mark.parametrize(("k", "n", "low", "high"), WILSON)
def test_wilson_hand_values(k: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=1e-6)
    assert hi == pytest.approx(high, abs=1e-6)


@pytest.mark.parametrize(("k", "n"), [(0, 0), (3, 2), (-1, 5)])
def test_wilson_rejects_undefined(k: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(k, n)


@pytest.mark.parametrize(("b", "c", "p"), MCNEMAR)
def test_mcnemar_hand_values(b: int, c: int, p: float) -> None:
    assert mcnemar_exact_p(b, c) == pytest.approx(p, abs=1e-15)


@pytest.mark.parametrize(("values", "q", "expected"), PERCENTILES)
def test_percentile_hand_values(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_rejects_empty_and_bad_q() -> None:
    with pytest.raises(ValueError):
        percentile([], 0.5)
    with pytest.raises(ValueError):
        percentile([1.0], 1.5)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    install_macros(c)
    return c


def test_sql_wilson_matches_python(con: duckdb.DuckDBPyConnection) -> None:
    cases = [(k, n) for n in (1, 2, 7, 10, 33, 100, 498, 1986) for k in sorted({0, 1, n // 3, n // 2, n - 1, n})]
    for k, n in cases:
        lo, hi = con.execute("SELECT wilson_low(?, ?), wilson_high(?, ?)", [k, n, k, n]).fetchone()
        assert (lo, hi) == pytest.approx(wilson_interval(k, n), abs=1e-12), (k, n)
    assert con.execute("SELECT wilson_low(0, 0), wilson_high(0, 0)").fetchone() == (None, None)


def test_sql_mcnemar_matches_python(con: duckdb.DuckDBPyConnection) -> None:
    for b, c in [*((b, c) for b, c, _ in MCNEMAR), (40, 61), (120, 90), (500, 450), (3, 900)]:
        (p,) = con.execute("SELECT mcnemar_exact_p(?, ?)", [b, c]).fetchone()
        assert p == pytest.approx(mcnemar_exact_p(b, c), rel=1e-9, abs=1e-300), (b, c)


def test_sql_quantile_is_the_pinned_percentile(con: duckdb.DuckDBPyConnection) -> None:
    for values, q, _ in PERCENTILES:
        rows = ", ".join(f"({v}::DOUBLE)" for v in values)
        (got,) = con.execute(f"SELECT quantile_cont(x, {q}) FROM (VALUES {rows}) t(x)").fetchone()
        assert got == pytest.approx(percentile(values, q))
