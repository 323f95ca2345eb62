"""The report's first screen: which system is best, by how much, at what cost, on every dataset at once.

Why one table: a reader opening report.html asks one question first; one table per dataset in
alphabetical order, with nothing marked, made them compare numbers across tables by eye. Here each
row is a (system, reader) and each dataset (in the papers' order: LoCoMo, LoCoMo-MC10, then
LongMemEval oracle, S, M) one column group of its main metric: the headline with its 95 %
interval, the failures-as-wrong lower bound (unscored questions counted wrong), the cost per correct
answer, and the gap to the best system of that column; the best is marked. The accuracy-vs-context
plots (one point per system and retrieval cut-off) sit under it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.core.families import FAMILY_LOCOMO, FAMILY_LONGMEMEVAL, FAMILY_MC10
from pipeline.metrics.aggregates import METRIC_FAMILIES
from pipeline.metrics.bounds import FAILURES_AS_WRONG, N_FAILURES_AS_WRONG, TOKENS_PER_CORRECT, USD_PER_CORRECT

Row = dict[str, Any]
FAMILY_ORDER = (FAMILY_LOCOMO, FAMILY_MC10, FAMILY_LONGMEMEVAL)  # LoCoMo (2024), its MC10 form, LongMemEval
_VARIANTS = (("oracle", 0), (r"(^|_)s($|_)", 1), (r"(^|_)m($|_)", 2))  # LongMemEval's haystack sizes
BEST_MARK = "★"


def _f(v: Any, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def dataset_order(datasets: Sequence[str], main_metric: Callable[[str], str | None]) -> list[str]:
    """Datasets in the papers' order: by family (of the dataset's main metric), LongMemEval by haystack
    size (oracle, S, M), then by name; a dataset of no known family last."""

    def key(d: str) -> tuple[int, int, str]:
        metric = main_metric(d)
        families = METRIC_FAMILIES.get(metric or "", frozenset())
        family = next((i for i, f in enumerate(FAMILY_ORDER) if f in families), len(FAMILY_ORDER))
        variant = next((rank for pattern, rank in _VARIANTS if re.search(pattern, d.lower())), 3)
        return family, variant, d

    return sorted(datasets, key=key)


def _cost(r: Row) -> str:
    usd, tokens = r.get(USD_PER_CORRECT), r.get(TOKENS_PER_CORRECT)
    parts = [f"${usd:.4f}"] if usd is not None else []
    parts += [f"{tokens:,.0f} tok"] if tokens is not None else []
    return " · ".join(parts) or "–"


def _cell(r: Row | None, best: float | None) -> str:
    if r is None or r.get("headline_value") is None:
        return '<td class="num muted" colspan=3>–</td>'
    value = r["headline_value"]
    is_best = best is not None and value == best
    mark = f'<span class="ok" title="best of this column">{BEST_MARK}</span> ' if is_best else ""
    gap = "" if is_best or best is None else f'<span class="sub">{value - best:+.3f}</span>'
    ci = ""
    if r.get("ci_low") is not None:
        ci = f'<span class="ci">[{_f(r.get("ci_low"))}, {_f(r.get("ci_high"))}]</span>'
    n = r.get(N_FAILURES_AS_WRONG) or 0
    bound = _f(r.get(FAILURES_AS_WRONG)) + (f' <span class="sub">{n} as wrong</span>' if n else "")
    strong = f"<b>{_f(value)}</b>" if is_best else _f(value)
    return f'<td class="num">{mark}{strong} {ci}{gap}</td><td class="num">{bound}</td><td class="num">{_cost(r)}</td>'


def headline_table(rows: Sequence[Row], main_metric: Callable[[str], str | None]) -> str:
    """Systems x datasets on each dataset's main metric (``rows``: accuracy_report rows)."""
    datasets = dataset_order(sorted({r["dataset"] for r in rows}), main_metric)
    cells: dict[tuple[str, str, str], Row] = {}
    for r in rows:
        if r["metric"] == main_metric(r["dataset"]):
            cells[(r["system"], r["reader"], r["dataset"])] = r
    series = sorted({(s, rd) for s, rd, _ in cells})
    if not series:
        return '<p class="note">no judgments yet</p>'
    best = {
        d: max((r["headline_value"] for (_, _, ds), r in cells.items() if ds == d and r["headline_value"] is not None),
               default=None)
        for d in datasets
    }  # fmt: skip
    top = "<th rowspan=2>system</th><th rowspan=2>reader</th>" + "".join(
        f"<th colspan=3>{html.escape(d)} <span class=note>{html.escape(str(main_metric(d)))}</span></th>"
        for d in datasets
    )
    sub = "<th>value [95 %] vs best</th><th>failures as wrong</th><th>cost / correct</th>" * len(datasets)
    body = "".join(
        f"<tr><td>{html.escape(s)}</td><td>{html.escape(rd)}</td>"
        + "".join(_cell(cells.get((s, rd, d)), best[d]) for d in datasets)
        + "</tr>"
        for s, rd in series
    )
    return f'<div class="scroll"><table><thead><tr>{top}</tr><tr>{sub}</tr></thead><tbody>{body}</tbody></table></div>'


FIRST_SCREEN_NOTE = (
    '<p class="note">Each dataset\'s main metric. <b>value</b>: the headline over the scored questions with its '
    f"95 % interval, {BEST_MARK} the best of the column, the others' gap to it; <b>failures as wrong</b>: the same "
    "value with every unscored question (failed answer or judgment, unparseable verdict, no verdict) counted wrong, "
    "and how many; <b>cost / correct</b>: the reader's dollars and tokens over every answer, per correct answer.</p>"
)
