"""report.html: one self-contained page (inline CSS, plots as base64 PNG) a person opens in a browser.

Why this layout: per dataset, the headline table first (with failures and exclusions next to the
number, never folded into it), then the plots, then detail tables; every metric named in the
table is defined at the bottom of the page.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pipeline.metrics.retrieval import EVIDENCE_RECALL_CONTEXT, RECALL_ANY, metric_column
from pipeline.report import plots
from pipeline.report.build import ReportData
from pipeline.report.definitions import OFFLINE_LABEL, reader_display
from pipeline.report.views import ALL_TYPES, HEADLINE_RETRIEVAL, headline_column

Row = dict[str, Any]

CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1400px;
       padding: 0 1em; color: #222; line-height: 1.4; }
h1 { border-bottom: 2px solid #444; padding-bottom: .2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #bbb; }
h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; }
th { background: #f0f0f0; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:nth-child(even) td { background: #fafafa; }
.offline { color: #8a4b00; font-weight: 600; }
.note { color: #555; font-size: 13px; }
.warn { color: #a00000; font-weight: 600; }
code, pre { background: #f4f4f4; padding: 2px 4px; border-radius: 3px; }
pre { padding: .6em; overflow-x: auto; }
img { max-width: 100%; border: 1px solid #ddd; margin: .5em 0; }
.scroll { overflow-x: auto; }
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def with_ci(row: Row) -> str:
    value = num(row.get("headline_value"))
    if row.get("aggregate") == "accuracy" and row.get("wilson_low") is not None:
        return f"{value} [{num(row['wilson_low'])}, {num(row['wilson_high'])}]"
    return value


def reader_cell(row: Row) -> str:
    text = esc(reader_display(row["reader"], row.get("reader_label")))
    return f'<span class="offline">{text}</span>' if row.get("reader_label") == "offline" else text


Column = tuple[str, Callable[[Row], str], bool]  # header, cell renderer (returns HTML), numeric


def table(rows: Sequence[Row], columns: Sequence[Column]) -> str:
    if not rows:
        return '<p class="note">no rows</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h, _, _ in columns)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if n else ''}>{fn(r)}</td>" for _, fn, n in columns) + "</tr>" for r in rows
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def col(key: str, header: str | None = None, digits: int = 3) -> Column:
    return (header or key, lambda r: esc(num(r.get(key), digits)), True)


def text_col(key: str, header: str | None = None) -> Column:
    return (header or key, lambda r: esc(r.get(key)), False)


ACCURACY_COLUMNS: list[Column] = [
    text_col("system"),
    ("reader", reader_cell, False),
    text_col("judge"),
    text_col("metric"),
    ("value [Wilson 95 %]", lambda r: esc(with_ci(r)), True),
    text_col("aggregate"),
    col("n_scored"),
    col("n_correct"),
    col("n_failed_answer", "failed answers"),
    col("n_failed_judgment", "failed judgments"),
    col("n_invalid", "invalid"),
    col("n_excluded", "excluded"),
    col("n_missing", "missing"),
    col("latency_p50_s", "latency p50 s"),
    col("latency_p95_s", "latency p95 s"),
    col("mean_prompt_tokens", "tokens in", 1),
    col("mean_completion_tokens", "tokens out", 1),
    col("mean_context_tokens", "context tokens", 0),
    col("cost_per_question_usd", "USD / question", 5),
    col("n_cost_unknown", "cost unknown"),
] + [col(headline_column(lv, c)) for lv, c in HEADLINE_RETRIEVAL]

BY_TYPE_COLUMNS: list[Column] = [
    text_col("type_raw", "type (raw)"),
    text_col("type_name", "type (named)"),
    text_col("system"),
    ("reader", reader_cell, False),
    text_col("judge"),
    text_col("metric"),
    ("value [Wilson 95 %]", lambda r: esc(with_ci(r)), True),
    col("n_scored"),
    col("n_failed_answer", "failed answers"),
    col("n_failed_judgment", "failed judgments"),
    col("n_invalid", "invalid"),
    col("n_excluded", "excluded"),
    col("n_type_questions", "questions of type"),
]

PAIRED_COLUMNS: list[Column] = [
    text_col("reader"),
    text_col("judge"),
    text_col("metric"),
    text_col("system_a"),
    text_col("system_b"),
    col("n_paired", "paired questions"),
    col("accuracy_a"),
    col("accuracy_b"),
    col("n_only_a_correct", "only A correct (b)"),
    col("n_only_b_correct", "only B correct (c)"),
    col("mcnemar_p", "McNemar exact p", 4),
]

RETRIEVAL_KEYS = [
    metric_column(RECALL_ANY, 1), metric_column(RECALL_ANY, 5), metric_column(RECALL_ANY, 10),
    "recall_all_at_5", "recall_all_at_10", "ndcg_any_at_10", "evidence_recall_at_10", EVIDENCE_RECALL_CONTEXT,
]  # fmt: skip
RETRIEVAL_COLUMNS: list[Column] = [
    text_col("system"),
    text_col("level"),
    text_col("type_raw", "type (raw)"),
    text_col("type_name", "type (named)"),
    col("n_questions", "questions"),
    col("n_scored", "scored"),
    col("n_excluded_abstention", "excl. abstention"),
    col("n_excluded_no_gold", "excl. no gold"),
    col("n_failed", "failed"),
    *[col(k, k.replace("_at_", "@")) for k in RETRIEVAL_KEYS],
    col("retrieval_latency_p50_s", "latency p50 s", 4),
    col("retrieval_latency_p95_s", "latency p95 s", 4),
]


def _group(rows: Iterable[Row], *keys: str) -> dict[tuple[Any, ...], list[Row]]:
    out: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for r in rows:
        out[tuple(r.get(k) for k in keys)].append(r)
    return dict(out)


def img(b64: str, alt: str) -> str:
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{b64}">'


def confusion_html(rows: Sequence[Row]) -> str:
    """Predicted (rows, incl. invalid / failed) x gold index (columns) count matrix."""
    golds = sorted({r["gold_index"] for r in rows})
    preds = sorted({r["predicted"] for r in rows}, key=lambda p: (not p.isdigit(), int(p) if p.isdigit() else 0, p))
    counts = {(r["predicted"], r["gold_index"]): r["n"] for r in rows}
    head = "<th>predicted \\ gold</th>" + "".join(f"<th>{g}</th>" for g in golds)
    body = "".join(
        f"<tr><th>{esc(p)}</th>" + "".join(f"<td class=num>{counts.get((p, g), 0)}</td>" for g in golds) + "</tr>"
        for p in preds
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def dataset_section(data: ReportData, dataset: str) -> str:
    parts = [f'<h2 id="ds-{esc(dataset)}">Dataset {esc(dataset)}</h2>']
    acc = [r for r in data.rows("accuracy") if r["dataset"] == dataset]
    parts.append("<h3>Answer accuracy</h3>")
    parts.append(table(acc, ACCURACY_COLUMNS))
    by_type = [r for r in data.rows("accuracy_by_type") if r["dataset"] == dataset]
    for (metric, judge), rows in sorted(_group(by_type, "metric", "judge").items()):
        title = f"{dataset}: {metric} by question type (judge {judge})"
        parts.append(img(plots.accuracy_by_type(rows, title), title))
    for (metric, judge), rows in sorted(_group(acc, "metric", "judge").items()):
        title = f"{dataset}: {metric} vs context tokens (judge {judge})"
        parts.append(img(plots.accuracy_vs_context(rows, title), title))
    if by_type:
        parts += ["<h3>Accuracy by question type</h3>", table(by_type, BY_TYPE_COLUMNS)]
    parts.append(_confusions(data, dataset))
    paired = [r for r in data.rows("paired_comparisons") if r["dataset"] == dataset]
    if paired:
        parts += ["<h3>Paired comparisons (same questions, McNemar exact)</h3>", table(paired, PAIRED_COLUMNS)]
    parts.append(_retrieval(data, dataset))
    return "\n".join(parts)


def _confusions(data: ReportData, dataset: str) -> str:
    rows = [r for r in data.rows("mc_confusion") if r["dataset"] == dataset]
    if not rows:
        return ""
    parts = ["<h3>Multiple-choice confusion (predicted option vs gold option)</h3>"]
    for (system, reader), group in sorted(_group(rows, "system", "reader").items()):
        parts += [f"<p><b>{esc(system)} / {esc(reader)}</b></p>", confusion_html(group)]
    return "\n".join(parts)


def _retrieval(data: ReportData, dataset: str) -> str:
    rows = [r for r in data.rows("retrieval") if r["dataset"] == dataset]
    if not rows:
        return '<h3>Retrieval</h3><p class="note">no retrieval metrics for this dataset</p>'
    overall = [r for r in rows if r["type_raw"] == ALL_TYPES]
    parts = ["<h3>Retrieval (all question types)</h3>", table(overall, RETRIEVAL_COLUMNS)]
    session = [r for r in overall if r["level"] == "session" and r.get("n_scored")]
    if session:
        title = f"{dataset}: session-level recall_any@k"
        parts.append(img(plots.recall_at_k(session, RECALL_ANY, title), title))
    per_type = [r for r in rows if r["type_raw"] != ALL_TYPES]
    parts += ["<h3>Retrieval by question type</h3>", table(per_type, RETRIEVAL_COLUMNS)]
    return "\n".join(parts)


def definitions_section(data: ReportData) -> str:
    rows = [{"name": k, "definition": v} for k, v in data.definitions.items()]
    rows += [{"name": k, "definition": v} for k, v in sorted(data.judge_metrics.items())]
    cols: list[Column] = [("metric", lambda r: f"<code>{esc(r['name'])}</code>", False), text_col("definition")]
    return '<h2 id="definitions">Metric definitions</h2>' + table(rows, cols)


def render(data: ReportData) -> str:
    """The whole page."""
    has_offline = any(r.get("reader_label") == "offline" for r in data.rows("accuracy"))
    toc = "".join(f'<li><a href="#ds-{esc(d)}">{esc(d)}</a></li>' for d in data.datasets)
    offline_note = (
        f'<p class="offline">Readers marked [{OFFLINE_LABEL}] answer without any language model '
        "(extractive / heuristic baselines): their numbers are not LLM results.</p>"
        if has_offline
        else ""
    )
    body = "\n".join(dataset_section(data, d) for d in data.datasets)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>membench report</title>
<style>{CSS}</style></head><body>
<h1>membench report</h1>
<p class="note">generated {esc(data.generated_at)} from <code>{esc(data.results_dir)}</code></p>
<p>Query the same numbers: <code>duckdb {esc(data.catalog)}</code> then</p>
<pre>{esc(data.example_sql)}</pre>
<p class="note">Failed answers and failed judgments are counted apart and never scored as wrong;
accuracy = correct / scored. Views: accuracy_report, accuracy_by_type, paired_comparisons, mc_confusion,
retrieval_report, judgment_outcomes.</p>
{offline_note}
<ul>{toc}<li><a href="#definitions">metric definitions</a></li></ul>
{body}
{definitions_section(data)}
</body></html>
"""
