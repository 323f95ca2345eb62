"""``membench leaderboard RESULTS...``: one table (and one static page) across runs, from their own SQL.

Why grouped: a number is only comparable with another scored by the same metric, judge and
reader on the same dataset. Each (dataset, metric, judge, reader) is a group; systems are ranked
inside a group only. When one (dataset, metric) appears under several readers or judges, the
groups are printed apart and a note says they are not ranked against each other.

Every figure comes from a run's ``accuracy_report`` view (pipeline/catalog/report.py): the
headline value (accuracy, or the mean score of a mean metric), its 95 % interval and method,
the scored / judged counts (failures are counted, never scored), reader tokens and cost per
question. For product memory systems (pipeline/products) the memory's own LLM usage during
ingestion is added from the ``product_session`` markers of the ingestion checkpoints, per question
of the run (the memory is shared by the questions of a haystack).

Beside each headline: its failures-as-wrong lower bound with the number of unscored questions it
counts as wrong, and tokens / dollars per correct answer (pipeline.metrics.bounds). When two
systems of a group are ranked one way by their headlines and the other way by their bounds (their
failure rates differ enough to change the order), the group says so.
"""

from __future__ import annotations

import html
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.metrics.bounds import order_reversed
from pipeline.report.compare import resolve_run
from pipeline.report.libraries import versions_note
from pipeline.report.sql import query_rows, view_names
from pipeline.store.results import ResultStore

LEADERBOARD_SQL = """
SELECT dataset, system, reader, reader_label, judge, metric, aggregate, headline_value, ci_low, ci_high, ci_method,
       n_scored, n_judgments, n_failed_answer, n_failed_judgment, n_dataset_questions,
       mean_prompt_tokens, mean_completion_tokens, cost_per_question_usd, n_cost_unknown,
       failures_as_wrong, n_failures_as_wrong, tokens_per_correct, usd_per_correct
FROM accuracy_report
"""

# the product memories' ingestion usage, from the markers in their checkpoints (pipeline/products/base.py)
MEMORY_USAGE_SQL = """
SELECT regexp_extract(filename, '/memory/([^/]+)/([^/]+)/[^/]*$', 1) AS system,
       regexp_extract(filename, '/memory/([^/]+)/([^/]+)/[^/]*$', 2) AS dataset,
       sum(json_extract(text, '$.prompt_tokens')::BIGINT + json_extract(text, '$.completion_tokens')::BIGINT) AS tokens,
       sum(json_extract(text, '$.cost_usd')::DOUBLE) AS cost_usd,
       sum(json_extract(text, '$.upstream_llm_calls')::BIGINT) AS upstream_calls
FROM read_parquet(?, filename = true, union_by_name = true)
WHERE kind = 'product_session' GROUP BY ALL
"""

GroupKey = tuple[str, str, str, str]  # dataset, metric, judge, reader


@dataclass(frozen=True)
class Entry:
    """One system's headline in one run."""

    run: str
    dataset: str
    system: str
    reader: str
    judge: str
    metric: str
    aggregate: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None
    n_scored: int
    n_judgments: int
    n_failed: int
    prompt_tokens: float | None
    completion_tokens: float | None
    cost_per_question: float | None
    memory_tokens_per_question: float | None  # product memories: ingestion LLM tokens / questions
    bound: float | None = None  # failures_as_wrong: unscored questions counted as wrong
    n_bound: int = 0  # how many questions the bound counts as wrong without a score
    tokens_per_correct: float | None = None  # reader tokens per correct answer
    usd_per_correct: float | None = None

    @property
    def group(self) -> GroupKey:
        return (self.dataset, self.metric, self.judge, self.reader)


@dataclass(frozen=True)
class Leaderboard:
    runs: list[Path]
    groups: dict[GroupKey, list[Entry]]  # ranked: best headline first, unscored last
    notes: list[str]
    # group -> "A (run) above B (run) by headline, below by failures as wrong (...)" lines
    reversals: dict[GroupKey, list[str]] = field(default_factory=dict)


def _memory_usage(root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    files = sorted((root / "parquet" / "memory").glob("*/*/*.parquet"))
    if not files:
        return {}
    store = ResultStore(results_dir=str(root))
    with store.connect() as con:  # checkpoints are published atomically (pipeline.store.results): no torn file to skip
        rows = query_rows(con, MEMORY_USAGE_SQL, [[str(f) for f in files]])
    return {(r["system"], r["dataset"]): r for r in rows}


def run_entries(root: Path) -> list[Entry]:
    """Every accuracy_report row of one run as an Entry (empty when the run has no report views)."""
    store = ResultStore(results_dir=str(root))
    with store.connect() as con:
        if "accuracy_report" not in view_names(con):
            return []
        rows = query_rows(con, LEADERBOARD_SQL)
    usage = _memory_usage(root)
    return [_entry(root.name, r, usage.get((r["system"], r["dataset"]))) for r in rows]


def _entry(run: str, r: dict[str, Any], mem: dict[str, Any] | None) -> Entry:
    n = r["n_judgments"] or 0
    memory_tokens = mem["tokens"] / n if mem and n and mem["tokens"] is not None else None
    return Entry(
        run=run, dataset=r["dataset"], system=r["system"], reader=r["reader_label"] or r["reader"],
        judge=r["judge"], metric=r["metric"], aggregate=r["aggregate"], value=r["headline_value"],
        ci_low=r["ci_low"], ci_high=r["ci_high"], ci_method=r["ci_method"], n_scored=r["n_scored"] or 0,
        n_judgments=n, n_failed=(r["n_failed_answer"] or 0) + (r["n_failed_judgment"] or 0),
        prompt_tokens=r["mean_prompt_tokens"], completion_tokens=r["mean_completion_tokens"],
        cost_per_question=r["cost_per_question_usd"], memory_tokens_per_question=memory_tokens,
        bound=r["failures_as_wrong"], n_bound=r["n_failures_as_wrong"] or 0,
        tokens_per_correct=r["tokens_per_correct"], usd_per_correct=r["usd_per_correct"],
    )  # fmt: skip


def reversals(entries: list[Entry]) -> list[str]:
    """Pairs of a ranked group whose failures-as-wrong bounds reverse their headline order."""
    lines = []
    for i, hi in enumerate(entries):
        for lo in entries[i + 1 :]:
            if order_reversed(hi.value, lo.value, hi.bound, lo.bound):
                lines.append(
                    f"{hi.system} ({hi.run}) ranks above {lo.system} ({lo.run}) by its headline "
                    f"({_f(hi.value)} vs {_f(lo.value)}) but below it once failures count as wrong "
                    f"({_f(hi.bound)} with {hi.n_bound} unscored vs {_f(lo.bound)} with {lo.n_bound})"
                )
    return lines


def build(args: list[str]) -> Leaderboard:
    """The leaderboard of the runs named by ``args`` (results folders or config files)."""
    runs = [resolve_run(a) for a in args]
    groups: dict[GroupKey, list[Entry]] = defaultdict(list)
    for root in runs:
        for e in run_entries(root):
            groups[e.group].append(e)
    for entries in groups.values():
        entries.sort(key=lambda e: (e.value is None, -(e.value or 0.0), e.system, e.run))
    by_metric: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for dataset, metric, judge, reader in groups:
        by_metric[(dataset, metric)].add((judge, reader))
    notes = [
        f"{dataset} / {metric}: scored under {len(pairs)} (judge, reader) pairs "
        f"({'; '.join(f'{j} + {r}' for j, r in sorted(pairs))}); they are ranked separately, never against each other"
        for (dataset, metric), pairs in sorted(by_metric.items())
        if len(pairs) > 1
    ]
    flips = {key: found for key, entries in groups.items() if (found := reversals(entries))}
    notes += [f"runs on other library versions (their manifests): {line}" for line in
              versions_note([str(r.name) for r in runs], runs)]  # fmt: skip
    return Leaderboard(runs, dict(sorted(groups.items())), notes, flips)


# ---- rendering -------------------------------------------------------------------------------
HEADERS = ("#", "system", "run", "value", "95% CI", "failures as wrong (n)", "scored/judged", "failed",
           "tokens/q (reader)", "memory tokens/q", "cost/q", "tokens/correct", "cost/correct")  # fmt: skip


def _f(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _cells(rank: int | None, e: Entry) -> tuple[str, ...]:
    tokens = None if e.prompt_tokens is None else e.prompt_tokens + (e.completion_tokens or 0.0)
    ci = "-" if e.ci_low is None else f"[{_f(e.ci_low)}, {_f(e.ci_high)}] {e.ci_method or ''}".strip()
    cost = "-" if e.cost_per_question is None else f"${e.cost_per_question:.5f}"
    cost_correct = "-" if e.usd_per_correct is None else f"${e.usd_per_correct:.5f}"
    return (
        "-" if rank is None else str(rank), e.system, e.run, _f(e.value), ci, f"{_f(e.bound)} ({e.n_bound})",
        f"{e.n_scored}/{e.n_judgments}", str(e.n_failed), _f(tokens, 0), _f(e.memory_tokens_per_question, 0), cost,
        _f(e.tokens_per_correct, 0), cost_correct,
    )  # fmt: skip


def _ranked(entries: list[Entry]) -> list[tuple[int | None, Entry]]:
    return [(i if e.value is not None else None, e) for i, e in enumerate(entries, start=1)]


def group_title(key: GroupKey) -> str:
    dataset, metric, judge, reader = key
    return f"{dataset} | metric {metric} | judge {judge} | reader {reader}"


def text_report(board: Leaderboard) -> str:
    lines = [f"leaderboard of {len(board.runs)} run(s): " + ", ".join(str(r) for r in board.runs)]
    for key, entries in board.groups.items():
        rows = [HEADERS, *(_cells(rank, e) for rank, e in _ranked(entries))]
        widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
        lines += ["", group_title(key)]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        lines += [f"  failure rates change the order: {line}" for line in board.reversals.get(key, [])]
    if board.notes:
        lines += ["", *(f"note: {n}" for n in board.notes)]
    return "\n".join(lines)


def render_html(board: Leaderboard) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>membench leaderboard</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f3f3f3}</style></head><body>",
        "<h1>membench leaderboard</h1>",
        "<p>Runs: " + ", ".join(html.escape(str(r)) for r in board.runs) + "</p>",
        '<p>Systems are ranked only within one dataset, metric, judge and reader. "failures as wrong (n)": the '
        "value with the n unscored questions (failed answer or judgment, unparseable verdict, no verdict) counted "
        "wrong.</p>",
    ]
    for n in board.notes:
        parts.append(f"<p><b>Note:</b> {html.escape(n)}</p>")
    for key, entries in board.groups.items():
        parts.append(f"<h2>{html.escape(group_title(key))}</h2><table><tr>")
        parts += [f"<th>{html.escape(h)}</th>" for h in HEADERS]
        parts.append("</tr>")
        for rank, e in _ranked(entries):
            parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(rank, e)) + "</tr>")
        parts.append("</table>")
        flips = board.reversals.get(key, [])
        parts += [f"<p><b>Failure rates change the order:</b> {html.escape(line)}</p>" for line in flips]
    parts.append("</body></html>")
    return "\n".join(parts)


LEADERBOARD_HTML = "leaderboard.html"


def html_path(board: Leaderboard, given: str | None) -> Path:
    """Where the page goes: beside the first run's results folder (``results/leaderboard.html`` for
    runs under results/), wherever ``membench`` was typed; an absolute path as given."""
    beside = board.runs[0].parent if board.runs else Path.cwd()
    path = Path(given or LEADERBOARD_HTML).expanduser()
    return path if path.is_absolute() else beside / path


def write_html(board: Leaderboard, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(render_html(board))
    tmp.replace(path)
    return path
