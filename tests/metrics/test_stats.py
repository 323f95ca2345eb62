"""Wilson interval, McNemar exact test and percentiles: hand values, and the SQL macros agree."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.metrics.stats import (
    Z_95,
    bootstrap_index,
    bootstrap_mean_ci,
    install_macros,
    mcnemar_exact_p,
    paired_bootstrap,
    percentile,
    wilson_interval,
)

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


# seed, counter, n -> index; hand-traced for (0, 0): x = 1; round 1: 48271 ^ (48271 >> 15 = 1) = 48270;
# round 2: 48270 * 48271 mod (2^31 - 1) = 182557523, ^ (>> 15 = 5571) = 182554256; round 3 likewise;
# the rest pinned so a change of the generator (and so of every reported interval) is noticed.
BOOT_INDEX = [(0, 0, 1_000_000, bootstrap_index(0, 0, 1_000_000)), (13, 0, 7, 0), (13, 1, 7, 4), (13, 4, 7, 6)]


def test_bootstrap_index_hand_trace() -> None:
    x = 1
    x = (x * 48271) % 2147483647
    x ^= x >> 15
    assert x == 48270
    x = (x * 48271) % 2147483647
    assert x == 182557523
    x ^= x >> 15
    x = (x * 48271) % 2147483647
    x ^= x >> 15
    assert bootstrap_index(0, 0, 1 << 30) == x % (1 << 30)


@pytest.mark.parametrize(("seed", "ctr", "n", "expected"), BOOT_INDEX)
def test_bootstrap_index_pinned(seed: int, ctr: int, n: int, expected: int) -> None:
    assert bootstrap_index(seed, ctr, n) == expected


def test_bootstrap_index_is_roughly_uniform() -> None:
    n, draws = 7, 70_000
    counts = [0] * n
    for j in range(draws):
        counts[bootstrap_index(13, j, n)] += 1
    expected = draws / n  # sd of a count ~ sqrt(10000 * 6/7) = 93; 5 sd = 463
    assert all(abs(c - expected) < 463 for c in counts), counts


# values -> (low, high): constant samples and single values have a degenerate interval
BOOT_CI = [
    ([0.4], (0.4, 0.4)),
    ([1.0, 1.0, 1.0], (1.0, 1.0)),
    ([0.0] * 50, (0.0, 0.0)),
]


@pytest.mark.parametrize(("values", "expected"), BOOT_CI)
def test_bootstrap_mean_ci_degenerate(values: list[float], expected: tuple[float, float]) -> None:
    assert bootstrap_mean_ci(values) == pytest.approx(expected)


def test_bootstrap_mean_ci_two_values_hand() -> None:
    # [0, 1] with n = 2: each resample mean is 0, .5 or 1 with probabilities 1/4, 1/2, 1/4; with
    # 1000 resamples the 2.5 % and 97.5 % percentiles are 0 and 1.
    assert bootstrap_mean_ci([0.0, 1.0]) == (0.0, 1.0)


def test_bootstrap_mean_ci_close_to_normal_theory() -> None:
    # 400 values 0..399 / 399: mean .5, sd .2894; normal 95 % half-width 1.96 * sd / 20 = .0284
    values = [i / 399 for i in range(400)]
    lo, hi = bootstrap_mean_ci(values)
    assert lo < 0.5 < hi
    assert (hi - lo) / 2 == pytest.approx(Z_95 * 0.28940 / 20, rel=0.12)


def test_bootstrap_is_seeded() -> None:
    values = [0.1, 0.5, 0.9, 0.3, 1.0, 0.0, 0.25]
    assert bootstrap_mean_ci(values) == bootstrap_mean_ci(values)
    assert bootstrap_mean_ci(values, seed=1) != bootstrap_mean_ci(values, seed=2)


def test_bootstrap_rejects_empty() -> None:
    with pytest.raises(ValueError):
        bootstrap_mean_ci([])
    with pytest.raises(ValueError):
        paired_bootstrap([], [])
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [1.0, 2.0])


# a, b -> diff, low, high, p (hand: identical pairs -> no difference; a constant shift c -> every
# resampled difference is c, interval (c, c), p = 2 * min(0, 1) = 0)
PAIRED = [
    ([0.2, 0.4, 0.6], [0.2, 0.4, 0.6], 0.0, 0.0, 0.0, 1.0),
    ([0.2, 0.4, 0.6], [0.3, 0.5, 0.7], 0.1, 0.1, 0.1, 0.0),
    ([0.5, 0.5], [0.0, 0.0], -0.5, -0.5, -0.5, 0.0),
]


@pytest.mark.parametrize(("a", "b", "diff", "low", "high", "p"), PAIRED)
def test_paired_bootstrap_hand(a: list[float], b: list[float], diff: float, low: float, high: float, p: float) -> None:
    r = paired_bootstrap(a, b)
    assert (r.n, r.diff, r.low, r.high, r.p_value) == pytest.approx((len(a), diff, low, high, p))


def test_paired_bootstrap_noise_is_not_significant() -> None:
    a = [((i * 37) % 11) / 10 for i in range(60)]
    b = [((i * 37 + 5) % 11) / 10 for i in range(60)]  # same distribution, shuffled pairing
    r = paired_bootstrap(a, b)
    assert r.low < 0 < r.high and r.p_value > 0.05


def test_sql_bootstrap_matches_python(con: duckdb.DuckDBPyConnection) -> None:
    for values in ([0.4], [0.0, 1.0], [0.1, 0.5, 0.9, 0.3, 1.0, 0.0, 0.25], [i / 37 for i in range(37)]):
        (got,) = con.execute("SELECT bootstrap_mean_ci(?::DOUBLE[])", [values]).fetchone()
        assert tuple(got) == pytest.approx(bootstrap_mean_ci(values), abs=1e-12)
    ((idx,),) = con.execute("SELECT list_transform(range(50), lambda j: mb_boot_index(13, j, 7))").fetchall()
    assert idx == [bootstrap_index(13, j, 7) for j in range(50)]
    assert con.execute("SELECT bootstrap_mean_ci([]::DOUBLE[])").fetchone() == (None,)
