"""Statistics used by the reports: Wilson intervals, McNemar's exact test, percentiles.

Why pinned here: a benchmark table is only comparable across runs and papers when every
interval, test and percentile has one stated definition. Each definition exists twice on
purpose, as a Python reference function (table-tested against hand-computed values) and as the
DuckDB macro the live catalog views use (tests assert both agree), so ``SELECT * FROM
accuracy_report`` in the DuckDB shell gives exactly the numbers of ``results.json``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import duckdb

# the standard normal 0.975 quantile: a two-sided 95 % interval
Z_95 = 1.959963984540054

P50 = 0.5
P95 = 0.95

WILSON_95 = "wilson_95"
MCNEMAR_EXACT = "mcnemar_exact_p"
PERCENTILE_METHOD = "linear"  # Hyndman & Fan type 7 = numpy default = DuckDB quantile_cont


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


# ---- the same definitions as DuckDB macros (persisted in results.duckdb) -------------------
_WILSON_CENTER = "((k::DOUBLE / n + {z2} / (2 * n)) / (1 + {z2} / n))"
_WILSON_HALF = "({z} * sqrt((k::DOUBLE / n) * (1 - k::DOUBLE / n) / n + {z2} / (4 * n::DOUBLE * n)) / (1 + {z2} / n))"


def _wilson_sql(sign: str, bound: str) -> str:
    z2 = repr(Z_95 * Z_95)
    center = _WILSON_CENTER.format(z2=z2)
    half = _WILSON_HALF.format(z=repr(Z_95), z2=z2)
    return f"CASE WHEN n > 0 THEN {bound}({'0.0' if bound == 'greatest' else '1.0'}, {center} {sign} {half}) END"


MACROS: dict[str, str] = {
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
