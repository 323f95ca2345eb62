"""Numbers a skeptic accepts: the failures-as-wrong lower bound, cost per correct answer, order reversals.

Why: a headline is computed over the questions that were scored; a question whose answer or
judgment failed (an unparseable verdict included) or that never got a verdict leaves the
denominator, so crashes raise the score. The lower bound puts every such question back as wrong,
and says how many there were. Accuracy alone also hides what it cost: the same accuracy at ten
times the tokens is not the same result, so cost is reported per correct answer.

Each definition exists twice, as a Python reference function (table-tested) and as the SQL
expression the catalog views use (``*_sql``; a test ties both on a stored catalog).
"""

from __future__ import annotations

# ---- pinned names (columns of accuracy_report / accuracy_by_type, the report, compare, leaderboard)
FAILURES_AS_WRONG = "failures_as_wrong"  # the lower bound: unscored questions counted as wrong (score 0)
N_FAILURES_AS_WRONG = "n_failures_as_wrong"  # how many questions the bound counts as wrong that were not scored
TOKENS_PER_CORRECT = "tokens_per_correct"
USD_PER_CORRECT = "usd_per_correct"
SECONDS_PER_CORRECT = "seconds_per_correct"


def failures_as_wrong(credit: float, n_scored: int, n_unscored: int) -> float | None:
    """``credit / (n_scored + n_unscored)``: the headline with every unscored question scored 0.

    ``credit``: correct answers (accuracy metrics) or the sum of scores (mean-score metrics) over
    the scored questions; ``n_unscored``: failed answers + failed judgments (unparseable verdicts
    included) + questions of the dataset without a verdict row. Excluded questions (the metric does
    not apply) stay out of both. None when there is no question at all (never 0: nothing was measured).
    """
    n = n_scored + n_unscored
    return None if n == 0 else credit / n


def failures_as_wrong_sql(credit: str, n_scored: str, n_unscored: str) -> str:
    """The SQL of ``failures_as_wrong`` over three column expressions."""
    n = f"(({n_scored}) + ({n_unscored}))"
    return f"CASE WHEN {n} = 0 THEN NULL ELSE ({credit})::DOUBLE / {n} END"


def per_correct(total: float | None, n_correct: int) -> float | None:
    """What ``total`` (tokens, dollars, seconds spent on every answer) cost per correct answer.

    None when nothing was correct (the cost of a correct answer is unbounded, never 0) or when the
    total is unknown (an unpriced model, a reader that reports no tokens).
    """
    if total is None or n_correct <= 0:
        return None
    return total / n_correct


def per_correct_sql(total: str, n_correct: str) -> str:
    """The SQL of ``per_correct``."""
    return f"CASE WHEN ({n_correct}) > 0 THEN ({total})::DOUBLE / ({n_correct}) END"


def order_reversed(value_a: float | None, value_b: float | None, bound_a: float | None, bound_b: float | None) -> bool:
    """True when the failures-as-wrong bounds order A and B strictly the other way round from their headlines.

    A tie on either side is no order, hence no reversal; an unknown value is no reversal either.
    """
    if None in (value_a, value_b, bound_a, bound_b):
        return False
    assert value_a is not None and value_b is not None and bound_a is not None and bound_b is not None
    return (value_a > value_b and bound_a < bound_b) or (value_a < value_b and bound_a > bound_b)


# ---- judge error rates on known answers (pipeline/judges/probe.py) ------------------------------
FALSE_ACCEPT_RATE = "false_accept_rate"
FALSE_REJECT_RATE = "false_reject_rate"


def error_rate(n_errors: int, n_judged: int) -> float | None:
    """``n_errors / n_judged`` over the probes that got a verdict (a failed judgment is no verdict:
    counted apart, never as an accept or a reject). False accepts: known-wrong answers judged
    correct, over known-wrong answers judged; false rejects: known-right answers judged wrong, over
    known-right answers judged. None when no probe of the kind got a verdict."""
    return None if n_judged == 0 else n_errors / n_judged


def error_rate_sql(n_errors: str, n_judged: str) -> str:
    """The SQL of ``error_rate``."""
    return f"CASE WHEN ({n_judged}) > 0 THEN ({n_errors})::DOUBLE / ({n_judged}) END"
