"""Agreement between two judges on the same answers: Cohen's kappa on their binary verdicts.

Why kappa and not raw agreement: two judges that both call 90 % of answers correct agree on at
least 80 % of them by chance alone; kappa = (p_o - p_e) / (1 - p_e) measures agreement beyond
what their marginal rates predict (p_o = observed agreement, p_e = sum over labels of the product
of the two judges' rates of that label). It is undefined (None, never 0 or 1) when p_e = 1, i.e.
both judges give one and the same label to every answer. The report view ``judge_agreement``
computes the same quantity in SQL from the 2x2 counts (``cohen_kappa_counts``).
"""

from __future__ import annotations

from collections.abc import Sequence

COHEN_KAPPA = "cohen_kappa"
DEFINITION = (
    "Cohen's kappa of two judges' verdicts (correct / not) on the answers both scored: (p_o - p_e) / (1 - p_e), "
    "p_o = share of answers where they agree, p_e = p_a * p_b + (1 - p_a) * (1 - p_b) with p_a, p_b each judge's "
    "share of 'correct'; NULL when p_e = 1 (both constant and equal)."
)


def cohen_kappa_counts(both: int, only_a: int, only_b: int, neither: int) -> float | None:
    """Kappa from the 2x2 table: both correct, only A, only B, neither (None when undefined)."""
    n = both + only_a + only_b + neither
    if n == 0:
        return None
    p_o = (both + neither) / n
    p_a, p_b = (both + only_a) / n, (both + only_b) / n
    p_e = p_a * p_b + (1 - p_a) * (1 - p_b)
    if p_e == 1:
        return None
    return (p_o - p_e) / (1 - p_e)


def cohen_kappa(labels_a: Sequence[bool], labels_b: Sequence[bool]) -> float | None:
    """Kappa of two equally long verdict sequences (the same answers, in the same order)."""
    if len(labels_a) != len(labels_b):
        raise ValueError(f"kappa needs paired verdicts: {len(labels_a)} vs {len(labels_b)}")
    pairs = list(zip(labels_a, labels_b, strict=True))
    return cohen_kappa_counts(
        sum(a and b for a, b in pairs),
        sum(a and not b for a, b in pairs),
        sum(b and not a for a, b in pairs),
        sum(not a and not b for a, b in pairs),
    )
