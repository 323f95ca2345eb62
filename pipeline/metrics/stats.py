"""Statistics used by the reports: Wilson intervals, McNemar's exact test, percentiles, and a
seeded bootstrap (interval of a mean, paired difference of two means).

Why pinned here: a benchmark table is only comparable across runs and papers when every
interval, test and percentile has one stated definition. Each definition exists twice on
purpose, as a Python reference function (table-tested against hand-computed values) and as the
DuckDB macro the live catalog views use (tests assert both agree), so ``SELECT * FROM
accuracy_report`` in the DuckDB shell gives exactly the numbers of ``results.json``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import duckdb

# the standard normal 0.975 quantile: a two-sided 95 % interval
Z_95 = 1.959963984540054

P95 = 0.95

WILSON_95 = "wilson_95"
PERCENTILE_METHOD = "linear"  # Hyndman & Fan type 7 = numpy default = DuckDB quantile_cont

BOOTSTRAP_95 = "bootstrap_percentile_95"
BOOTSTRAP_SEED = 13
BOOTSTRAP_RESAMPLES = 1000
CI_LOW_Q = 0.025
CI_HIGH_Q = 0.975

# counter-based generator of the bootstrap (the same arithmetic in Python and in the SQL macro):
# MINSTD multiplier modulo the Mersenne prime 2^31 - 1, followed by an xor-shift, three rounds.
_PRIME = 2147483647
_MULT = 48271
_SHIFT = 15
_SEED_STRIDE = 1000003
_ROUNDS = 3


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / n``.

    Why Wilson rather than the normal (Wald) interval: at the sizes of benchmark slices (tens of
    questions per type) and near 0 or 1 the Wald interval collapses to width zero; Wilson stays
    inside [0, 1] and keeps its coverage.
    """
    if n <= 0:
        raise ValueError(f"Wilson interval needs n > 0 (got n={n})")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within [0, n]: successes={successes}, n={n}")
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts ``b`` and ``c``.

    Under H0 (both systems equally accurate on these questions) the discordant pairs split
    Binomial(b + c, 1/2); p = min(1, 2 * P(X <= min(b, c))). Computed in exact rational
    arithmetic. With no discordant pair there is no evidence of a difference: p = 1.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0 (got b={b}, c={c})")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0 <= q <= 1) by linear interpolation between order statistics.

    Definition (``linear``): sort the n values x_0..x_{n-1}, h = (n - 1) * q, then
    x_floor(h) + (h - floor(h)) * (x_floor(h)+1 - x_floor(h)). Same as numpy's default and DuckDB's
    ``quantile_cont``, which the catalog views use for p50/p95.
    """
    if not values:
        raise ValueError("percentile of an empty sequence is undefined")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be within [0, 1] (got {q})")
    xs = sorted(float(v) for v in values)
    h = (len(xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def bootstrap_index(seed: int, counter: int, n: int) -> int:
    """The ``counter``-th pseudo-random index in ``[0, n)`` of the bootstrap stream ``seed``.

    Why a counter-based generator of our own rather than ``random``: the catalog views compute
    the same bootstrap inside DuckDB (a macro, no Python UDF, so the persisted ``results.duckdb``
    works in the DuckDB shell), and the two must draw the same resamples to give the same
    interval. Draw j of resample b over n values uses counter ``b * n + j``.
    """
    if n <= 0:
        raise ValueError(f"bootstrap over an empty sample (n={n})")
    x = (seed * _SEED_STRIDE + counter) % (_PRIME - 1) + 1
    for _ in range(_ROUNDS):
        x = (x * _MULT) % _PRIME
        x ^= x >> _SHIFT
    return x % n


def _resample_means(values: Sequence[float], seed: int, resamples: int) -> list[float]:
    n = len(values)
    return [sum(values[bootstrap_index(seed, b * n + j, n)] for j in range(n)) / n for b in range(resamples)]


def bootstrap_mean_ci(
    values: Sequence[float], seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """Percentile-bootstrap 95 % interval of the mean of ``values``.

    Why bootstrap and not Wilson: a mean score such as token F1 is not a proportion of
    successes, so a binomial interval is the wrong quantity. ``resamples`` samples of size n are
    drawn with replacement (``bootstrap_index``); the bounds are the 2.5 % and 97.5 % ``linear``
    percentiles of their means. Seeded: the same values always give the same interval.
    """
    if not values:
        raise ValueError("bootstrap interval of an empty sample is undefined")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1 (got {resamples})")
    means = _resample_means([float(v) for v in values], seed, resamples)
    return percentile(means, CI_LOW_Q), percentile(means, CI_HIGH_Q)


@dataclass(frozen=True)
class PairedBootstrap:
    """Paired bootstrap of ``mean(b) - mean(a)`` over the same questions."""

    n: int
    diff: float
    low: float
    high: float
    p_value: float


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> PairedBootstrap:
    """Paired bootstrap of the difference of two means on the same questions (``b - a``).

    Question i contributes the pair (a[i], b[i]); resampling questions (``bootstrap_index``)
    keeps each pair together, so the per-question correlation of the two systems narrows the
    interval as it should. Interval: 2.5 % / 97.5 % ``linear`` percentiles of the resampled mean
    differences. Two-sided p-value: min(1, 2 * min(share of resampled differences <= 0, share
    >= 0)); when every difference is 0 the p-value is 1.
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} vs {len(b)}")
    if not a:
        raise ValueError("paired bootstrap of empty samples is undefined")
    diffs = [float(y) - float(x) for x, y in zip(a, b, strict=True)]
    means = _resample_means(diffs, seed, resamples)
    below = sum(m <= 0 for m in means) / resamples
    above = sum(m >= 0 for m in means) / resamples
    return PairedBootstrap(
        n=len(diffs),
        diff=sum(diffs) / len(diffs),
        low=percentile(means, CI_LOW_Q),
        high=percentile(means, CI_HIGH_Q),
        p_value=min(1.0, 2 * min(below, above)),
    )


# ---- the same definitions as DuckDB macros (persisted in results.duckdb) -------------------
_WILSON_CENTER = "((k::DOUBLE / n + {z2} / (2 * n)) / (1 + {z2} / n))"
_WILSON_HALF = "({z} * sqrt((k::DOUBLE / n) * (1 - k::DOUBLE / n) / n + {z2} / (4 * n::DOUBLE * n)) / (1 + {z2} / n))"


def _wilson_sql(sign: str, bound: str) -> str:
    z2 = repr(Z_95 * Z_95)
    center = _WILSON_CENTER.format(z2=z2)
    half = _WILSON_HALF.format(z=repr(Z_95), z2=z2)
    return f"CASE WHEN n > 0 THEN {bound}({'0.0' if bound == 'greatest' else '1.0'}, {center} {sign} {half}) END"


def _rng_sql() -> str:
    x = f"((seed::BIGINT * {_SEED_STRIDE} + ctr::BIGINT) % {_PRIME - 1} + 1)"
    for _ in range(_ROUNDS):
        x = f"mb_xorshift(({x} * {_MULT}) % {_PRIME})"
    return f"(seed, ctr, n) AS {x} % n"


_BOOT_MEANS = (
    "list_transform(range(resamples), lambda b: list_avg(list_transform(range(len(xs)), "
    "lambda j: xs[mb_boot_index(seed, b * len(xs) + j, len(xs)) + 1])))"
)

MACROS: dict[str, str] = {
    "mb_xorshift": f"(x) AS xor(x, x >> {_SHIFT})",
    "mb_boot_index": _rng_sql(),
    "bootstrap_mean_ci": (
        f"(xs, seed := {BOOTSTRAP_SEED}, resamples := {BOOTSTRAP_RESAMPLES}) AS CASE WHEN len(xs) > 0 THEN "
        f"list_aggregate({_BOOT_MEANS}, 'quantile_cont', [{CI_LOW_Q}, {CI_HIGH_Q}]) END"
    ),
    "wilson_low": f"(k, n) AS {_wilson_sql('-', 'greatest')}",
    "wilson_high": f"(k, n) AS {_wilson_sql('+', 'least')}",
    "mcnemar_exact_p": (
        "(b, c) AS CASE WHEN b + c = 0 THEN 1.0 ELSE least(1.0, 2 * list_sum(list_transform("
        "range(0, least(b, c) + 1), lambda i: exp(lgamma(b + c + 1) - lgamma(i + 1) - lgamma(b + c - i + 1)"
        " - (b + c) * ln(2))))) END"
    ),
}


def install_macros(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Create (or replace) the statistics macros in ``con``; returns their names."""
    for name, body in MACROS.items():
        con.execute(f"CREATE OR REPLACE MACRO {name}{body}")
    return list(MACROS)
