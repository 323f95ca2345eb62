"""The HTML report: static pages a person opens from the results folder, no server, no network.

Layout (one page per dataset: a single page was 31,000 px tall with a 26-column table):
- ``report.html``: the overview. Per dataset, one compact table of systems x metrics (value and
  95 % interval, failures beside it) and the per-question-type table of the dataset's main
  metric with the systems side by side; links to the dataset pages; metric definitions folded.
- ``report/<dataset>.html``: everything about one dataset: every metric per type, retrieval,
  plots (or a note saying why there is none), paired comparisons, multiple-choice confusion,
  the failed questions, and the question index (one line per question with a verdict per system).
- ``report/<dataset>/questions-<n>.html``: the drill-down, ``QUESTIONS_PER_PAGE`` questions per
  page, each folded: question, gold answer and evidence, per system the retrieved units with the
  evidence marked and the rank of every gold unit, the answer, each judge's verdict, the error.

Every page is self-contained (inline CSS, plots as base64 PNG); the only script opens the
question a link points at (``#<partition key>``) and the pages read fine without it.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pipeline.catalog.report import ALL_TYPES
from pipeline.metrics.bounds import FAILURES_AS_WRONG, N_FAILURES_AS_WRONG
from pipeline.metrics.retrieval import RECALL_ANY
from pipeline.report.build import REPORT_HTML, ReportData
from pipeline.report.flags_html import dataset_flags, system_badges
from pipeline.report.glossary import OFFLINE_LABEL, reader_display
from pipeline.report.headline_html import FIRST_SCREEN_NOTE, dataset_order, headline_table
from pipeline.report.judges_html import judge_section
from pipeline.report.losses_html import loss_section
from pipeline.report.official_html import protocol_sections
from pipeline.report.product_html import product_section
from pipeline.report.questions import (
    MARK_CORRECT,
    MARK_EXCLUDED,
    MARK_FAILED,
    MARK_MISSING,
    MARK_WRONG,
    QuestionView,
    SystemView,
)
from pipeline.report.types_html import type_label_note

Row = dict[str, Any]

QUESTIONS_PER_PAGE = 100
REPORT_DIR = "report"

# main metric of a dataset (the per-type table of the overview): the first of these it has
PREFERRED_METRICS = (
    "mc_accuracy",
    "lme_official_llm_judge",
    "locomo_llm_judge",
    "mem0_locomo_judge",
    "locomo_f1",
    "lme_contains_normalized",
)

# retrieval columns of the compact retrieval table: (level, column, header)
RETRIEVAL_SUMMARY: tuple[tuple[str, str, str], ...] = (
    ("session", "recall_any_at_5", "session r_any@5"),
    ("session", "recall_any_at_10", "session r_any@10"),
    ("session", "ndcg_any_at_10", "session ndcg@10"),
    ("turn", "recall_any_at_10", "turn r_any@10"),
    ("turn", "recall_all_at_10", "turn r_all@10"),
    ("turn", "evidence_recall_context", "evidence in context"),
    ("turn", "evidence_recall_official_context", "evidence in context (LoCoMo official)"),
)

EVIDENCE_EXPLAINED = (
    '<p class="explain"><b>evidence in context</b> vs <b>evidence in context (LoCoMo official)</b>: both ask '
    "whether the gold evidence reached the reader. <i>evidence in context</i> is membench's measure: the share of "
    "a question's gold turns (evidence repaired: split lists, un-padded ids, ids of missing turns dropped) among "
    "the turns of the units in the reader's context; a context of derived text that names no turn (summaries, "
    "notes) scores 0, and questions without evidence are left out. <i>LoCoMo official</i> is LoCoMo's own formula, "
    "kept so published figures can be reproduced: it matches the raw evidence strings with the context's dialogue "
    "ids or, when the context holds no turns, only with its session numbers (a gold session in the context counts "
    "as found), and counts a question without evidence as 1. So the official figure is higher whenever a context "
    "names sessions rather than turns, or questions have no evidence; read the first to judge a retriever.</p>"
)

MARKS = {
    MARK_CORRECT: ("✓", "ok", "correct"),
    MARK_WRONG: ("✗", "bad", "wrong"),
    MARK_EXCLUDED: ("–", "muted", "excluded (metric does not apply)"),
    MARK_FAILED: ("!", "fail", "failed (see error)"),
    MARK_MISSING: ("·", "muted", "not run yet"),
}

CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 1.2em auto; max-width: 1200px;
       padding: 0 1em; color: #222; line-height: 1.35; font-size: 14px; }
h1 { font-size: 22px; border-bottom: 2px solid #444; padding-bottom: .2em; margin-bottom: .3em; }
h2 { font-size: 18px; margin: 1.4em 0 .4em; border-bottom: 1px solid #bbb; }
h3 { font-size: 15px; margin: 1.1em 0 .3em; }
table { border-collapse: collapse; margin: .3em 0 .8em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; }
th { background: #f0f0f0; text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.ci { color: #666; font-size: 11px; }
.sub { color: #777; font-size: 11px; margin-left: 4px; }
.row { display: flex; flex-wrap: wrap; gap: 0 28px; align-items: flex-start; }
.offline { color: #8a4b00; }
.note { color: #555; font-size: 12px; }
.warn { color: #a00000; font-weight: 600; }
.ok { color: #0a7a2f; font-weight: 700; } .bad { color: #b00020; font-weight: 700; }
.fail { color: #fff; background: #b00020; padding: 0 4px; border-radius: 3px; font-weight: 700; }
.muted { color: #999; }
code { background: #f4f4f4; padding: 1px 3px; border-radius: 3px; font-size: 12px; }
img { max-width: 100%; border: 1px solid #ddd; margin: .3em 0; }
.scroll { overflow-x: auto; }
.plots { display: flex; flex-direction: column; gap: 8px; align-items: flex-start; } .plots img { max-width: 100%; }
.who { color: #555; font-size: 11px; margin-left: 6px; } p.explain { color: #444; font-size: 12px; max-width: 1100px; }
nav a { margin-right: 1em; }
details.q { border: 1px solid #ddd; border-radius: 4px; margin: 3px 0; }
details.q > summary { cursor: pointer; padding: 3px 6px; background: #fafafa; }
details.q[open] > summary { background: #eef3fb; }
details.q > div { padding: 4px 10px 8px; }
.unit { margin: 2px 0; font-size: 12px; } .unit.turn { background: #fff3b0; } .unit.session { background: #fbf7df; }
.err { color: #b00020; font-family: monospace; font-size: 12px; white-space: pre-wrap; }
td.qi { max-width: 520px; }
"""

OPEN_TARGET_JS = (
    "<script>function o(){var h=decodeURIComponent(location.hash.slice(1));var d=h&&document.getElementById(h);"
    "if(d&&d.tagName==='DETAILS'){d.open=true;d.scrollIntoView();}}window.addEventListener('hashchange',o);o();"
    "</script>"
)


# ---- small helpers ---------------------------------------------------------------------------
def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def latency_ms(p50_s: float | None, p95_s: float | None) -> str:
    """``"31 / 49"``: seconds as whole milliseconds (``–`` when the retrievals carry no latency)."""

    def ms(v: float | None) -> str:
        return "–" if v is None else f"{1000 * v:.0f}"

    return f"{ms(p50_s)} / {ms(p95_s)}"


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def dataset_page(dataset: str) -> str:
    return f"{REPORT_DIR}/{slug(dataset)}.html"


def questions_page(dataset: str, page: int) -> str:
    return f"{REPORT_DIR}/{slug(dataset)}/questions-{page}.html"


def question_href(dataset: str, index: int, key: str, from_root: bool) -> str:
    """Link to a question's drill-down (``index``: its position in the dataset's question list)."""
    path = questions_page(dataset, index // QUESTIONS_PER_PAGE + 1)
    return f"{path if from_root else path.removeprefix(REPORT_DIR + '/')}#{slug(key)}"


def value_cell(row: Row | None) -> str:
    """Headline value with its 95 % interval and, small below it, scored / failed / missing."""
    if row is None:
        return '<td class="num muted">–</td>'
    ci = ""
    if row.get("ci_low") is not None:
        ci = f' <span class="ci">[{num(row["ci_low"])}, {num(row["ci_high"])}]</span>'
    problems = []
    failed = (row.get("n_failed_answer") or 0) + (row.get("n_failed_judgment") or 0)
    if failed:
        problems.append(f'<span class="warn">{failed} failed</span>')
    if row.get("n_missing"):
        problems.append(f"{row['n_missing']} missing")
    if row.get("n_invalid"):
        problems.append(f"{row['n_invalid']} invalid")
    sub = f"n={row.get('n_scored')}" + ("; " + "; ".join(problems) if problems else "")
    value = esc(num(row.get("headline_value")))
    return f'<td class="num">{value}{ci}{bound_html(row)}<span class="sub">{sub}</span></td>'


def bound_html(row: Row) -> str:
    """The failures-as-wrong lower bound beside a headline, when any question went unscored."""
    n = row.get(N_FAILURES_AS_WRONG) or 0
    if not n:
        return ""
    title = f"{FAILURES_AS_WRONG}: {n} unscored question(s) (failed, unparseable, no verdict) counted as wrong"
    return f' <span class="warn" title="{esc(title)}">≥ {esc(num(row.get(FAILURES_AS_WRONG)))} ({n} as wrong)</span>'


def reader_text(reader: str, label: str | None) -> str:
    text = esc(reader_display(reader, label))
    return f'<span class="offline">{text}</span>' if label == "offline" else text


def series(row: Row) -> tuple[str, str]:
    return (row["system"], row["reader"])


def _group(rows: Iterable[Row], *keys: str) -> dict[tuple[Any, ...], list[Row]]:
    out: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for r in rows:
        out[tuple(r.get(k) for k in keys)].append(r)
    return dict(out)


def metric_order(metrics: Iterable[str]) -> list[str]:
    ms = set(metrics)
    return [m for m in PREFERRED_METRICS if m in ms] + sorted(ms - set(PREFERRED_METRICS))


def img(b64: str, alt: str) -> str:
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{b64}">'


def page(title: str, body: str, root: str, script: str = "") -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{esc(title)}</title><style>{CSS}</style></head><body>
<nav><a href="{root}{REPORT_HTML}">overview</a></nav>
{body}
{script}</body></html>
"""


# ---- tables ----------------------------------------------------------------------------------
def systems_by_metrics(rows: Sequence[Row], badges: dict[str, str] | None = None) -> str:
    """Rows: system / reader; columns: judge metrics; cells: value [95 % CI] and problems."""
    if not rows:
        return '<p class="note">no judgments yet for this dataset</p>'
    metrics = metric_order({r["metric"] for r in rows})
    labels = {series(r): r.get("reader_label") for r in rows}
    cells = {(series(r), r["metric"]): r for r in rows}
    head = "<th>system</th><th>reader</th>" + "".join(f"<th>{esc(m)}</th>" for m in metrics)
    body = "".join(
        f"<tr><td>{esc(s)}{(badges or {}).get(s, '')}</td><td>{reader_text(rd, labels[(s, rd)])}</td>"
        + "".join(value_cell(cells.get(((s, rd), m))) for m in metrics)
        + "</tr>"
        for s, rd in sorted(labels)
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def types_by_systems(rows: Sequence[Row], overall: Sequence[Row]) -> str:
    """Rows: question types (+ all); columns: system / reader side by side; one metric."""
    if not rows:
        return '<p class="note">no per-type rows</p>'
    keys = sorted({series(r) for r in rows})
    types = sorted({(str(r["type_name"]), str(r["type_raw"])) for r in rows})
    cells = {(str(r["type_name"]), str(r["type_raw"]), series(r)): r for r in rows}
    total = {series(r): r for r in overall}
    head = "<th>question type</th><th>n</th>" + "".join(f"<th>{esc(s)}<br>{esc(rd)}</th>" for s, rd in keys)
    body = []
    for name, raw in types:
        n = next((cells[(name, raw, k)].get("n_type_questions") for k in keys if (name, raw, k) in cells), None)
        label = esc(name) if name == raw else f"{esc(name)} <span class='note'>({esc(raw)})</span>"
        body.append(
            f"<tr><td>{label}</td><td class=num>{esc(num(n))}</td>"
            + "".join(value_cell(cells.get((name, raw, k))) for k in keys)
            + "</tr>"
        )
    if overall:
        body.append(
            "<tr><td><b>all</b></td><td class=num></td>" + "".join(value_cell(total.get(k)) for k in keys) + "</tr>"
        )
    table = f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    return table + type_label_note(rows)  # why a dataset's own label differs from LoCoMo's name (LoCoMo-MC10)


def simple_table(rows: Sequence[Row], columns: Sequence[tuple[str, Callable[[Row], str], bool]]) -> str:
    if not rows:
        return '<p class="note">no rows</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h, _, _ in columns)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if n else ''}>{fn(r)}</td>" for _, fn, n in columns) + "</tr>" for r in rows
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def retrieval_summary(rows: Sequence[Row], badges: dict[str, str] | None = None) -> str:
    """Systems x the main retrieval metrics (all question types pooled)."""
    overall = [r for r in rows if r["type_raw"] == ALL_TYPES]
    if not overall:
        return '<p class="note">no retrieval metrics for this dataset</p>'
    by = {(r["system"], r["level"]): r for r in overall}
    systems = sorted({r["system"] for r in overall})
    head = "<th>system</th><th>scored / excluded / failed</th>" + "".join(
        f"<th>{esc(h)}</th>" for _, _, h in RETRIEVAL_SUMMARY
    )
    head += "<th>retrieval ms p50 / p95</th>"  # per question, every question of the system
    body = []
    for s in systems:
        base = by.get((s, "session")) or by.get((s, "turn")) or {}
        counts = f"{base.get('n_scored')} / {base.get('n_excluded')} / {base.get('n_failed')}"
        vals = "".join(
            f"<td class=num>{esc(num((by.get((s, lv)) or {}).get(c)))}</td>" for lv, c, _ in RETRIEVAL_SUMMARY
        )
        latency = latency_ms(base.get("retrieval_latency_p50_s"), base.get("retrieval_latency_p95_s"))
        vals += f"<td class=num>{latency}</td>"
        body.append(f"<tr><td>{esc(s)}{(badges or {}).get(s, '')}</td><td class=num>{counts}</td>{vals}</tr>")
    table = f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    if any(r.get("evidence_recall_official_context") is not None for r in overall):
        table += EVIDENCE_EXPLAINED
    return table


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


PAIRED_COLUMNS: list[tuple[str, Callable[[Row], str], bool]] = [
    ("metric", lambda r: esc(r["metric"]), False),
    ("reader", lambda r: esc(r["reader"]), False),
    ("A", lambda r: esc(r["system_a"]), False),
    ("B", lambda r: esc(r["system_b"]), False),
    ("n", lambda r: esc(r["n_paired"]), True),
    ("A − B", lambda r: esc(_paired_diff(r)), True),
    ("only A / only B right", lambda r: f"{r['n_only_a_correct']} / {r['n_only_b_correct']}", True),
    ("McNemar p", lambda r: esc(num(r.get("mcnemar_p"), 4)), True),
]


def _paired_diff(r: Row) -> str:
    if r.get("aggregate") == "mean_score":
        return f"{num(r.get('score_diff'))} [{num(r.get('score_diff_ci_low'))}, {num(r.get('score_diff_ci_high'))}]"
    return num(r.get("accuracy_diff"))


# ---- overview --------------------------------------------------------------------------------
def main_metric(rows: Sequence[Row]) -> str | None:
    order = metric_order({r["metric"] for r in rows})
    return order[0] if order else None


def overview_section(data: ReportData, dataset: str) -> str:
    acc = [r for r in data.rows("accuracy") if r["dataset"] == dataset]
    parts = [
        f'<h2 id="ds-{slug(dataset)}">{esc(dataset)} '
        f'<a class="note" href="{dataset_page(dataset)}">details, failures, every question →</a></h2>',
    ]
    parts.append(dataset_flags(data, dataset))  # integrity flags (pipeline/report/flags_html.py)
    side = [f"<div><h3>systems x metrics</h3>{systems_by_metrics(acc, system_badges(data, dataset))}</div>"]
    metric = main_metric(acc)
    if metric:
        by_type = [r for r in data.rows("accuracy_by_type") if r["dataset"] == dataset and r["metric"] == metric]
        overall = [r for r in acc if r["metric"] == metric]
        if len({r["type_raw"] for r in by_type}) > 1:
            side.append(f"<div><h3>{esc(metric)} by question type</h3>{types_by_systems(by_type, overall)}</div>")
    parts.append(f'<div class="row">{"".join(side)}</div>')
    failed = [r for r in data.rows("failures") if r["dataset"] == dataset]
    if failed:
        keys = len({r["partition_key"] for r in failed})
        parts.append(
            f'<p class="warn">{keys} question(s) with a failed stage: '
            f'<a href="{dataset_page(dataset)}#failed">list</a></p>'
        )
    return "\n".join(parts)


def compare_links(data: ReportData) -> str:
    """Links to the paired comparisons with other runs (``membench compare OTHER THIS --html``)."""
    if not data.comparisons:
        return ""
    links = "".join(f'<li><a href="{esc(rel)}">{esc(Path(rel).stem)}</a></li>' for rel in data.comparisons)
    return f"<h2>Compared with other runs</h2><ul>{links}</ul>"


def definitions_section(data: ReportData) -> str:
    rows = [{"name": k, "definition": v} for k, v in data.definitions.items()]
    rows += [{"name": k, "definition": v} for k, v in sorted(data.judge_metrics.items())]
    cols = [
        ("metric", lambda r: f"<code>{esc(r['name'])}</code>", False),
        ("definition", lambda r: esc(r["definition"]), False),
    ]
    return (
        '<details id="definitions"><summary><b>Metric definitions</b> (every number on these pages)</summary>'
        + simple_table(rows, cols)
        + "</details>"
    )


def first_screen(data: ReportData, ordered: Sequence[str]) -> str:
    """Which system is best, by how much, at what cost (pipeline/report/headline_html.py), then the
    accuracy-vs-context plot of each dataset (one point per system and retrieval cut-off)."""
    acc = data.rows("accuracy")
    if not acc:
        return ""
    table = headline_table(acc, lambda d: main_metric([r for r in acc if r["dataset"] == d]))
    plots = [p for d in ordered if (p := context_plot(data, d))]
    return f"<h2>Which system is best, by how much, at what cost</h2>{table}{FIRST_SCREEN_NOTE}" + (
        f'<div class="plots">{"".join(plots)}</div>' if plots else ""
    )


def render_overview(data: ReportData) -> str:
    has_offline = any(r.get("reader_label") == "offline" for r in data.rows("accuracy"))
    offline_note = (
        f'<p class="offline">Readers marked [{OFFLINE_LABEL}] answer without any language model: their numbers '
        "are not LLM results.</p>"
        if has_offline
        else ""
    )
    acc = data.rows("accuracy")
    ordered = dataset_order(data.datasets, lambda d: main_metric([r for r in acc if r["dataset"] == d]))
    toc = " · ".join(f'<a href="{dataset_page(d)}">{esc(d)}</a>' for d in ordered)
    body = f"""<h1>membench report</h1>
<p class="note">generated {esc(data.generated_at)} · datasets: {toc} · <a href="#definitions">definitions</a><br>
Cells: value <span class="ci">[95 % interval: Wilson for accuracies, seeded bootstrap for mean scores]</span>,
<span class="warn">≥ lower bound (k as wrong)</span> when k questions went unscored (failed answer or judgment,
unparseable verdict, no verdict): the value with those k counted as wrong; below it n = scored questions.
Same numbers in SQL: <code>membench sql "{esc(data.example_sql)}"</code></p>
{offline_note}
{first_screen(data, ordered)}
{"".join(overview_section(data, d) for d in ordered)}
{compare_links(data)}
{definitions_section(data)}"""
    return page("membench report", body, "")


# ---- dataset page ----------------------------------------------------------------------------
def _plots(data: ReportData, dataset: str) -> str:
    from pipeline.report import plots  # matplotlib (~0.5 s CPU) only when a report is rendered, not at start-up

    acc = [r for r in data.rows("accuracy") if r["dataset"] == dataset]
    by_type = [r for r in data.rows("accuracy_by_type") if r["dataset"] == dataset]
    retr = [
        r for r in data.rows("retrieval")
        if r["dataset"] == dataset and r["type_raw"] == ALL_TYPES and r["level"] == "session" and r.get("n_scored")
    ]  # fmt: skip
    images, notes = [], []
    metric = main_metric(acc)
    unscored = metric and not any(_value(r) for r in acc if r["metric"] == metric)
    if unscored:  # every answer or judgment failed: say so instead of drawing empty axes
        failed = sum((r.get("n_failed_answer") or 0) + (r.get("n_failed_judgment") or 0) for r in acc)
        images.append(
            f'<p class="warn">no {esc(metric)} charts for {esc(dataset)}: no answer was scored, every answer or '
            f"judgment failed ({failed} failed; listed under Failed questions, retried by the next run)</p>"
        )
    elif metric and len({r["type_raw"] for r in by_type if r["metric"] == metric}) > 1:
        title = f"{dataset}: {metric} by question type"
        images.append(img(plots.accuracy_by_type([r for r in by_type if r["metric"] == metric], title), title))
    else:
        notes.append("no by-type plot: fewer than two question types with judgments")
    context = None if unscored else context_plot(data, dataset)
    if context:
        images.append(context)
    elif not unscored:
        notes.append("no accuracy-vs-context plot: no judged answers with a context size")
    if retr:
        title = f"{dataset}: session-level recall_any@k"
        images.append(img(plots.recall_at_k(retr, RECALL_ANY, title), title))
    else:
        notes.append("no recall@k plot: no question scored for session-level retrieval (no gold, or none retrieved)")
    note = "".join(f'<p class="note">{esc(n)}</p>' for n in notes)
    return f'<div class="plots">{"".join(images)}</div>{note}'


def context_plot(data: ReportData, dataset: str) -> str | None:
    """The accuracy-vs-context-tokens chart of the dataset's main metric, or None without points."""
    from pipeline.report import plots  # matplotlib only when a report is rendered

    acc = [r for r in data.rows("accuracy") if r["dataset"] == dataset]
    metric = main_metric(acc)
    rows = [r for r in acc if r["metric"] == metric and _value(r) and r.get("mean_context_tokens") is not None]
    if not metric or not rows:
        return None
    title = f"{dataset}: {metric} vs context tokens"
    return img(plots.accuracy_vs_context(rows, title), title)


def _value(row: Row) -> bool:
    """A row with a headline value (not None, not NaN)."""
    v = row.get("headline_value")
    return v is not None and v == v


def _failed_list(data: ReportData, dataset: str, index: dict[str, int]) -> str:
    rows = [r for r in data.rows("failures") if r["dataset"] == dataset]
    if not rows:
        return '<h3 id="failed">Failed questions</h3><p class="note">none</p>'
    cols = [
        ("question", lambda r: _qlink(dataset, r["partition_key"], index), False),
        ("stage", lambda r: esc(r["stage"]), False),
        ("error", lambda r: f'<span class="err">{esc((r.get("errors") or "")[:300])}</span>', False),
    ]
    return (
        f'<h3 id="failed">Failed questions ({len({r["partition_key"] for r in rows})})</h3>'
        '<p class="note">re-run: <code>dagster job execute -j full_benchmark</code> (failed questions are retried) '
        "or <code>membench failed</code> for one-question commands</p>" + simple_table(rows, cols)
    )


def _qlink(dataset: str, key: str, index: dict[str, int], text: str | None = None) -> str:
    if key not in index:
        return esc(text or key)
    return f'<a href="{esc(question_href(dataset, index[key], key, from_root=False))}">{esc(text or key)}</a>'


def mark_html(mark: str, who: str = "", score: float | None = None) -> str:
    """A verdict badge; a mean-score metric (``score`` given) shows its score instead of ✓/✗."""
    symbol, cls, title = MARKS[mark]
    if score is not None and mark in (MARK_CORRECT, MARK_WRONG):
        symbol, cls = f"{score:.2f}", "ok" if score >= 0.5 else "bad"
    label = f"{who}: {title}" if who else title
    return f'<span class="{cls}" title="{esc(label)}">{symbol}</span>'


def _badge(q: QuestionView, key: str, mean_metrics: set[str]) -> str:
    j = q.judgment(key)
    if j is None:
        return mark_html(MARK_MISSING, key)
    return mark_html(j["mark"], key, j.get("score") if j.get("metric") in mean_metrics else None)


def _question_index(dataset: str, questions: Sequence[QuestionView], judges: set[str], mean_metrics: set[str]) -> str:
    """One line per question: id, type, question, then the main metric's verdict per system.

    ``judges``: the judges of the main metric (from the accuracy rows, so a column stays when every
    judgment of it failed: a failed judgment has no metric); empty = every judge.
    """
    if not questions:
        return '<p class="note">no questions</p>'
    columns = sorted({k for q in questions for k in q.verdicts() if not judges or k.rsplit("/", 1)[-1] in judges})
    index = {q.partition_key: i for i, q in enumerate(questions)}
    head = "<th>question</th><th>type</th><th>text</th>" + "".join(
        f"<th>{esc('/'.join(c.split('/')[:2]))}</th>" for c in columns
    )
    body = []
    for q in questions:
        marks = "".join(f"<td>{_badge(q, c, mean_metrics)}</td>" for c in columns)
        body.append(
            f"<tr><td>{_qlink(dataset, q.partition_key, index, q.question_id)}</td><td>{esc(q.type_name)}</td>"
            f'<td class="qi">{esc(q.question[:140])}</td>{marks}</tr>'
        )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def render_dataset(data: ReportData, dataset: str, questions: Sequence[QuestionView]) -> str:
    acc = [r for r in data.rows("accuracy") if r["dataset"] == dataset]
    by_type = [r for r in data.rows("accuracy_by_type") if r["dataset"] == dataset]
    index = {q.partition_key: i for i, q in enumerate(questions)}
    badges = system_badges(data, dataset)  # integrity flags beside the numbers (pipeline/report/flags_html.py)
    parts = [f"<h1>{esc(dataset)}</h1>", dataset_flags(data, dataset), "<h2>Answers: systems x metrics</h2>",
             systems_by_metrics(acc, badges)]  # fmt: skip
    for metric in metric_order({r["metric"] for r in by_type}):
        rows = [r for r in by_type if r["metric"] == metric]
        if len({r["type_raw"] for r in rows}) > 1:
            overall = [r for r in acc if r["metric"] == metric]
            parts += [f"<h3>{esc(metric)} by question type</h3>", types_by_systems(rows, overall)]
    parts += [
        "<h2>Retrieval (all question types)</h2>",
        retrieval_summary([r for r in data.rows("retrieval") if r["dataset"] == dataset], badges),
    ]
    parts += protocol_sections(data, dataset)  # pipeline/report/official_html.py
    parts += product_section(data, dataset)  # pipeline/report/product_html.py
    parts += judge_section(data, dataset)  # pipeline/report/judges_html.py
    parts += loss_section(data, dataset, main_metric(acc))  # pipeline/report/losses_html.py
    parts += ["<h2>Plots</h2>", _plots(data, dataset)]
    paired = [r for r in data.rows("paired_comparisons") if r["dataset"] == dataset]
    if paired:
        parts += ["<h2>Paired comparisons (same questions)</h2>", simple_table(paired, PAIRED_COLUMNS)]
    confusion = [r for r in data.rows("mc_confusion") if r["dataset"] == dataset]
    if confusion:
        parts.append("<h2>Multiple-choice confusion</h2>")
        for (system, reader), group in sorted(_group(confusion, "system", "reader").items()):
            parts += [f"<p><b>{esc(system)} / {esc(reader)}</b></p>", confusion_html(group)]
    parts.append(_failed_list(data, dataset, index))
    main = main_metric(acc)
    parts += [
        f'<h2 id="questions">Questions ({len(questions)})</h2>',
        f'<p class="note">verdict of {esc(main or "each judge")} per system: '
        + " ".join(f"{mark_html(m)} {esc(t[2])}" for m, t in MARKS.items())
        + "; click a question for its drill-down</p>",
        _question_index(dataset, questions, {r["judge"] for r in acc if r["metric"] == main}, mean_metrics(data)),
    ]
    return page(f"membench: {dataset}", "\n".join(parts), "../")


def mean_metrics(data: ReportData) -> set[str]:
    """Judge metrics whose aggregate is a mean score (their drill-down shows scores)."""
    return {r["metric"] for r in data.rows("accuracy") if r.get("aggregate") == "mean_score"}


# ---- question pages --------------------------------------------------------------------------
def _system_block(s: SystemView, means: set[str]) -> str:
    parts = [f"<h3>{esc(s.system)}</h3>"]
    if s.status == "failed":
        parts.append(f'<p><span class="fail">retrieval failed</span> <span class="err">{esc(s.error)}</span></p>')
    elif s.status is not None:
        ranks = ", ".join(
            f"{esc(label)} → {'#' + str(rank) if rank is not None else '<span class=bad>not retrieved</span>'}"
            for label, rank in s.gold_ranks.items()
        )
        parts.append(
            f'<p class="note">{s.n_units} units ranked; context {esc(num(s.context_tokens))} tokens'
            + (f"; gold evidence: {ranks}" if ranks else "")
            + "</p>"
        )
        for u in s.units:
            star = "★ " if u.gold == "turn" else "☆ " if u.gold == "session" else ""
            parts.append(f'<div class="unit {u.gold}">#{u.rank} <b>{star}{esc(u.label)}</b> {esc(u.text)}</div>')
        if s.n_units > len(s.units):
            parts.append(f'<p class="note">… {s.n_units - len(s.units)} more units (SQL: retrievals.units)</p>')
    for a in s.answers:
        if a["status"] == "failed":
            parts.append(
                f'<p>reader <b>{esc(a["reader"])}</b>: <span class="fail">answer failed</span> '
                f'<span class="err">{esc(a["error"])}</span></p>'
            )
            continue
        invalid = ' <span class="warn">(invalid choice)</span>' if a.get("invalid") else ""
        verdicts = "; ".join(
            f"{esc(j['metric'] or j['judge'])} "
            + mark_html(j["mark"], str(j["judge"]), j.get("score") if j.get("metric") in means else None)
            + (f' <span class="err">{esc(j["error"])}</span>' if j["status"] == "failed" else "")
            for j in a["judgments"]
        )
        steps = "".join(f"<br>{esc(line)}" for line in a.get("agent_steps") or [])  # agentic readers
        parts.append(
            f"<p>reader <b>{esc(a['reader'])}</b>: {esc(a['prediction'])}{invalid}<br>"
            f'<span class="note">verdicts:</span> {verdicts or "<span class=muted>none yet</span>"}'
            + (f'<br><span class="note">agent steps:</span>{steps}' if steps else "")
            + "</p>"
        )
    return "".join(parts)


def question_block(q: QuestionView, means: set[str]) -> str:
    marks = "".join(
        f'<span class="who">{esc(" / ".join(k.split("/")))}</span> {_badge(q, k, means)}' for k in sorted(q.verdicts())
    )
    failed = f' <span class="fail">failed: {esc(", ".join(q.failed_stages))}</span>' if q.failed_stages else ""
    choices = ""
    if q.choices:
        items = "".join(
            f"<li{' class=ok' if i == q.correct_choice_index else ''}>{i}: {esc(c)}</li>"
            for i, c in enumerate(q.choices)
        )
        choices = f"<ol start=0 class=note>{items}</ol>"
    gold = ", ".join(esc(g) for g in q.gold) or '<span class="muted">none</span>'
    return (
        f'<details class="q" id="{slug(q.partition_key)}"><summary><b>{esc(q.question_id)}</b> '
        f'<span class="note">{esc(q.type_name)}</span> {esc(q.question[:160])} {marks}{failed}</summary><div>'
        f"<p><b>Q:</b> {esc(q.question)}<br><b>gold answer:</b> {esc(q.answer)}<br>"
        f"<b>gold evidence:</b> {gold} <span class=note>(★ unit holds a gold turn, ☆ unit in a gold session)</span></p>"
        f"{choices}{''.join(_system_block(s, means) for s in q.systems)}</div></details>"
    )


def render_question_pages(dataset: str, questions: Sequence[QuestionView], means: set[str]) -> dict[str, str]:
    pages: dict[str, str] = {}
    n_pages = max(1, -(-len(questions) // QUESTIONS_PER_PAGE))
    for p in range(n_pages):
        chunk = questions[p * QUESTIONS_PER_PAGE : (p + 1) * QUESTIONS_PER_PAGE]
        nav = " ".join(
            f'<a href="questions-{i + 1}.html">{i + 1}</a>' if i != p else f"<b>{i + 1}</b>" for i in range(n_pages)
        )
        body = (
            f"<h1>{esc(dataset)}: questions {p * QUESTIONS_PER_PAGE + 1}–{p * QUESTIONS_PER_PAGE + len(chunk)}</h1>"
            f'<p class="note"><a href="../{slug(dataset)}.html">back to {esc(dataset)}</a> · pages: {nav}</p>'
            + "".join(question_block(q, means) for q in chunk)
        )
        pages[questions_page(dataset, p + 1)] = page(f"membench: {dataset} questions", body, "../../", OPEN_TARGET_JS)
    return pages


def render_pages(data: ReportData, questions: dict[str, list[QuestionView]]) -> dict[str, str]:
    """Every page of the report: relative path under the results folder -> HTML."""
    pages = {REPORT_HTML: render_overview(data)}
    for d in data.datasets:
        qs = questions.get(d, [])
        pages[dataset_page(d)] = render_dataset(data, d, qs)
        pages.update(render_question_pages(d, qs, mean_metrics(data)))
    return pages


def render(data: ReportData) -> str:
    """The overview page alone (``report.html``)."""
    return render_overview(data)
