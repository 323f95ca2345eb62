"""HTML sections of the official aggregate tables (pipeline/catalog/official.py).

Why pivoted: the papers print one line per system with the per-type (LongMemEval), per-category
(LoCoMo, order 4, 1, 2, 3, 5) or per-ability (BEAM, report_results.py's column order) figures side
by side; these tables read the same way.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from pipeline.report.build import ReportData

Row = dict[str, Any]


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _num(value: Any) -> str:
    return "–" if value is None else f"{float(value):.3f}"


def _table(head: Sequence[str], body: Iterable[Sequence[str]]) -> str:
    th = "".join(f"<th>{_esc(h)}</th>" for h in head)
    rows = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in body)
    return f'<div class="scroll"><table><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table></div>'


def _pivot(rows: Sequence[Row], keys: Sequence[str], label: str, value: str) -> tuple[list[str], list[list[str]]]:
    """One line per ``keys`` group, one column per ``label`` in row_order; cells ``value (n)``."""
    columns: dict[str, int] = {}
    lines: dict[tuple[Any, ...], dict[str, str]] = {}
    for r in sorted(rows, key=lambda r: r["row_order"]):
        name = str(r[label] if r["aggregate"] in ("type", "category", "ability") else r["aggregate"])
        columns.setdefault(name, r["row_order"])
        n = r.get("n_scored", r.get("n_questions"))
        failed = f", {r['n_failed']} failed" if r.get("n_failed") else ""
        lines.setdefault(tuple(r[k] for k in keys), {})[name] = f"{_num(r[value])} <small>(n={n}{failed})</small>"
    head = [*keys, *columns]
    body = [[_esc(k) for k in key] + [cells.get(c, "–") for c in columns] for key, cells in sorted(lines.items())]
    return head, body


def protocol_sections(data: ReportData, dataset: str) -> list[str]:
    """The official tables of ``dataset`` (empty when it has none)."""
    parts: list[str] = []
    lme = [r for r in data.rows("lme_official_accuracy") if r["dataset"] == dataset]
    if lme:
        parts.append("<h2>LongMemEval official aggregates (print_qa_metrics.py)</h2>")
        parts.append(_table(*_pivot(lme, ("metric", "system", "reader"), "type_raw", "accuracy")))
    cats = [r for r in data.rows("locomo_official_categories") if r["dataset"] == dataset]
    if cats:
        parts.append("<h2>LoCoMo official categories (order 4, 1, 2, 3, 5)</h2>")
        parts.append(_table(*_pivot(cats, ("metric", "system", "reader"), "category", "mean_score")))
    recall = [r for r in data.rows("locomo_official_recall") if r["dataset"] == dataset]
    if recall:
        parts.append("<h2>LoCoMo official evidence recall per category</h2>")
        parts.append(_table(*_pivot(recall, ("system",), "category", "recall")))
    beam = [r for r in data.rows("beam_official_abilities") if r["dataset"] == dataset]
    if beam:
        parts.append("<h2>BEAM per ability (report_results.py: mean over chats of each chat's mean)</h2>")
        parts.append(_table(*_pivot(beam, ("metric", "tier", "system", "reader"), "ability", "score")))
    dist = [r for r in data.rows("locomo_official_by_distance") if r["dataset"] == dataset]
    if dist:
        parts.append("<h2>LoCoMo accuracy by distance of the oldest evidence (1K-token bins)</h2>")
        head = ["metric", "system", "reader", "category", "bin (K tokens)", "n", "mean score"]
        body = [
            [_esc(r["metric"]), _esc(r["system"]), _esc(r["reader"]), _esc(r["category"]),
             _esc(r["distance_bin"]), _esc(r["n_scored"]), _num(r["mean_score"])]
            for r in dist
        ]  # fmt: skip
        parts.append(_table(head, body))
    return parts + repeat_section(data, dataset)


def repeat_section(data: ReportData, dataset: str) -> list[str]:
    """Readers with repeats (pipeline/catalog/repeats.py): per-repeat accuracy, mean +- sd, majority."""
    rows = [r for v in ("repeat_report", "judge_repeat_report") for r in data.rows(v) if r["dataset"] == dataset]
    if not rows:
        return []
    head = ["metric", "system", "reader", "judge", "repeats", "accuracy per repeat", "mean ± sd", "majority vote",
            "failed"]  # fmt: skip
    body = [
        [_esc(r["metric"]), _esc(r["system"]), _esc(r["reader"]), _esc(r["judge"]), _esc(r["n_repeats"]),
         " / ".join(_num(a) for a in r["repeat_accuracies"] or []),
         f"{_num(r['mean_accuracy'])} ± {_num(r['sd_accuracy'])}", _num(r["majority_accuracy"]), _esc(r["n_failed"])]
        for r in rows
    ]  # fmt: skip
    return ["<h2>Repeats (same questions: N answers each, or N verdicts of each answer)</h2>", _table(head, body)]
