"""Paired comparison of two runs (results folders or configs) on the questions both scored.

Why paired and on shared questions only: two runs of a benchmark usually differ in one thing (a
memory system's params, the reader, the judge model) and often in which questions finished; an
unpaired difference of two accuracies mixes the change with the question mix and wastes the
per-question correlation. Rows are matched on (dataset, system, reader, judge, metric) and
questions on their partition key; a question scored in one run only is counted, not compared.

Tests: binary metrics (aggregate ``accuracy``) use McNemar's exact test on the discordant
questions; mean metrics (``mean_score``, e.g. token F1) a seeded paired bootstrap of the mean
difference (``pipeline.metrics.stats``). Differences are ``B - A``.

Failures: a question one run scored and the other failed (answer or judgment, an unparseable
verdict included) is not compared, so two runs that fail at different rates can look better or
worse than they are. Each row therefore also gives, on the questions both runs attempted (scored
or failed), each run's failures-as-wrong bound (pipeline.metrics.bounds) and says when those
bounds order A and B the other way round from the paired values (``order_reversed``).
"""

from __future__ import annotations

import html
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.config.model import ConfigError, load_config
from pipeline.metrics.bounds import order_reversed
from pipeline.metrics.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, mcnemar_exact_p, paired_bootstrap
from pipeline.report.libraries import versions_note
from pipeline.report.sql import query_rows, view_names
from pipeline.store.results import CATALOG_NAME, ResultStore

TEST_MCNEMAR = "mcnemar_exact"
TEST_BOOTSTRAP = "paired_bootstrap"
AGG_ACCURACY = "accuracy"
AGG_MEAN_SCORE = "mean_score"

Key = tuple[str, str, str, str, str]  # dataset, system, reader, judge, metric

OUTCOMES_SQL = """
SELECT o.dataset, o.system, o.reader, o.judge, o.metric, o.partition_key, o.outcome, o.correct, o.score,
       coalesce(r.aggregate, 'accuracy') AS aggregate
FROM judgment_outcomes o
LEFT JOIN (SELECT DISTINCT metric, aggregate FROM accuracy_report) r ON r.metric = o.metric
WHERE o.outcome IN ('scored', 'answer_failed', 'judgment_failed')
"""


class RunNotFound(ValueError):
    """RUN_A / RUN_B names neither a results folder nor a readable config."""


@dataclass(frozen=True)
class CompareRow:
    """One (dataset, system, reader, judge, metric) compared across the two runs."""

    dataset: str
    system: str
    reader: str
    judge: str
    metric: str
    aggregate: str
    test: str
    n_paired: int
    n_only_a: int  # scored in run A only (not compared)
    n_only_b: int
    value_a: float
    value_b: float
    diff: float  # B - A on the paired questions
    ci_low: float | None  # paired bootstrap interval of the diff (mean metrics)
    ci_high: float | None
    b_only_a_correct: int | None  # McNemar's discordant counts (binary metrics)
    c_only_b_correct: int | None
    p_value: float
    n_failed_a: int = 0  # questions both runs attempted that A failed (answer or judgment)
    n_failed_b: int = 0
    bound_a: float | None = None  # failures-as-wrong bound of A on the questions both attempted
    bound_b: float | None = None
    order_reversed: bool = False  # the bounds order A and B the other way round from value_a / value_b


@dataclass(frozen=True)
class CompareResult:
    run_a: Path
    run_b: Path
    seed: int
    resamples: int
    rows: list[CompareRow]
    # libraries that can move a number at other versions in A and B (pipeline/report/libraries.py)
    libraries: list[str] = field(default_factory=list)


def resolve_run(arg: str) -> Path:
    """A results folder (with ``parquet/`` or ``results.duckdb``) or a config YAML -> results folder."""
    p = Path(arg)
    if p.is_dir():
        if (p / "parquet").is_dir() or (p / CATALOG_NAME).exists():
            return p.resolve()
        raise RunNotFound(f"{p} is not a results folder (no parquet/ inside)")
    if p.suffix in {".yaml", ".yml"}:
        try:
            root = load_config(str(p)).resolved_results_dir()
        except ConfigError as exc:
            raise RunNotFound(str(exc)) from None
        if not (root / "parquet").is_dir():
            raise RunNotFound(f"{arg}: its results folder {root} holds no results yet")
        return root
    raise RunNotFound(f"{arg}: no such results folder or config file")


def _outcomes(root: Path) -> tuple[dict[Key, dict[str, dict[str, Any]]], dict[Key, set[str]]]:
    """(key -> partition_key -> {correct, score, aggregate} of every scored judgment,
    key -> partition keys whose answer or judgment failed) of a run."""
    store = ResultStore(results_dir=str(root))
    scored: dict[Key, dict[str, dict[str, Any]]] = defaultdict(dict)
    failed: dict[Key, set[str]] = defaultdict(set)
    with store.connect() as con:
        if not {"judgment_outcomes", "accuracy_report"} <= view_names(con):
            return {}, {}
        for r in query_rows(con, OUTCOMES_SQL):
            key = (r["dataset"], r["system"], r["reader"], r["judge"], r["metric"])
            if r["outcome"] == "scored":
                scored[key][r["partition_key"]] = r
            else:
                failed[key].add(r["partition_key"])
    return dict(scored), dict(failed)


def _scored(root: Path) -> dict[Key, dict[str, dict[str, Any]]]:
    """key -> partition_key -> {correct, score, aggregate} for every scored judgment of a run."""
    return _outcomes(root)[0]


def failure_bounds(
    a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]], failed_a: set[str], failed_b: set[str], mean: bool
) -> tuple[int, int, float | None, float | None]:
    """(A's failed, B's failed, A's bound, B's bound) on the questions both runs attempted (scored or
    failed): a failed question scores 0 (pipeline.metrics.bounds.failures_as_wrong)."""
    attempted = (set(a) | failed_a) & (set(b) | failed_b)
    if not attempted:
        return 0, 0, None, None

    def credit(rows: dict[str, dict[str, Any]], k: str) -> float:
        if k not in rows:
            return 0.0
        return float(rows[k]["score"] or 0.0) if mean else float(bool(rows[k]["correct"]))

    n = len(attempted)
    return (
        len(attempted & failed_a), len(attempted & failed_b),
        sum(credit(a, k) for k in attempted) / n, sum(credit(b, k) for k in attempted) / n,
    )  # fmt: skip


def compare_key(
    key: Key,
    a: dict[str, dict[str, Any]],
    b: dict[str, dict[str, Any]],
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
    failed_a: set[str] | None = None,
    failed_b: set[str] | None = None,
) -> CompareRow | None:
    """Compare one key on its shared questions (None when none is shared); ``failed_*``: the
    questions each run failed for this key (for the failures-as-wrong bounds)."""
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    aggregate = a[shared[0]]["aggregate"]
    mean = aggregate == AGG_MEAN_SCORE
    n_fa, n_fb, bound_a, bound_b = failure_bounds(a, b, failed_a or set(), failed_b or set(), mean)
    common = {
        "dataset": key[0], "system": key[1], "reader": key[2], "judge": key[3], "metric": key[4],
        "aggregate": aggregate, "n_paired": len(shared), "n_only_a": len(set(a) - set(b)),
        "n_only_b": len(set(b) - set(a)), "n_failed_a": n_fa, "n_failed_b": n_fb, "bound_a": bound_a,
        "bound_b": bound_b,
    }  # fmt: skip
    if aggregate == AGG_MEAN_SCORE:
        xs = [float(a[k]["score"]) for k in shared]
        ys = [float(b[k]["score"]) for k in shared]
        boot = paired_bootstrap(xs, ys, seed=seed, resamples=resamples)
        va, vb = sum(xs) / len(xs), sum(ys) / len(ys)
        return CompareRow(
            **common, test=TEST_BOOTSTRAP, value_a=va, value_b=vb, diff=boot.diff,
            ci_low=boot.low, ci_high=boot.high, b_only_a_correct=None, c_only_b_correct=None, p_value=boot.p_value,
            order_reversed=order_reversed(va, vb, bound_a, bound_b),
        )  # fmt: skip
    ca = [bool(a[k]["correct"]) for k in shared]
    cb = [bool(b[k]["correct"]) for k in shared]
    only_a = sum(x and not y for x, y in zip(ca, cb, strict=True))
    only_b = sum(y and not x for x, y in zip(ca, cb, strict=True))
    n = len(shared)
    return CompareRow(
        **common, test=TEST_MCNEMAR, value_a=sum(ca) / n, value_b=sum(cb) / n, diff=(sum(cb) - sum(ca)) / n,
        ci_low=None, ci_high=None, b_only_a_correct=only_a, c_only_b_correct=only_b,
        p_value=mcnemar_exact_p(only_a, only_b),
        order_reversed=order_reversed(sum(ca) / n, sum(cb) / n, bound_a, bound_b),
    )  # fmt: skip


def compare_runs(run_a: Path, run_b: Path, seed: int | None = None, resamples: int | None = None) -> CompareResult:
    """Every key scored in both runs, compared on its shared questions."""
    seed = BOOTSTRAP_SEED if seed is None else seed
    resamples = BOOTSTRAP_RESAMPLES if resamples is None else resamples
    (sa, fa), (sb, fb) = _outcomes(run_a), _outcomes(run_b)
    rows = [
        r
        for key in sorted(set(sa) & set(sb))
        if (r := compare_key(key, sa[key], sb[key], seed, resamples, fa.get(key, set()), fb.get(key, set())))
    ]
    libraries = versions_note(["A", "B"], [run_a, run_b])
    return CompareResult(run_a=run_a, run_b=run_b, seed=seed, resamples=resamples, rows=rows, libraries=libraries)


HEADERS = (
    "dataset",
    "system",
    "reader",
    "metric",
    "n",
    "A",
    "B",
    "B-A",
    "95% CI (B-A)",
    "test",
    "p",
    "only A/B",
    "failed A/B",
    "failures as wrong A/B",
)
REVERSED_MARK = "ORDER REVERSED"  # the bounds order A and B the other way round


def _f(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _cells(r: CompareRow) -> tuple[str, ...]:
    if r.test == TEST_MCNEMAR:
        ci = f"b={r.b_only_a_correct} c={r.c_only_b_correct}"
    else:
        ci = f"[{_f(r.ci_low)}, {_f(r.ci_high)}]"
    return (
        r.dataset, r.system, r.reader, r.metric, str(r.n_paired), _f(r.value_a), _f(r.value_b), f"{r.diff:+.3f}",
        ci, r.test, _f(r.p_value, 4), f"{r.n_only_a}/{r.n_only_b}", f"{r.n_failed_a}/{r.n_failed_b}",
        f"{_f(r.bound_a)}/{_f(r.bound_b)}" + (f" {REVERSED_MARK}" if r.order_reversed else ""),
    )  # fmt: skip


LIBRARIES_HEAD = "A and B ran on other versions of libraries that can move a number (their manifests):"


def libraries_lines(result: CompareResult) -> list[str]:
    """What ``compare`` says about the two runs' library versions: nothing when they are the same."""
    return [LIBRARIES_HEAD, *(f"  {line}" for line in result.libraries)] if result.libraries else []


def text_report(result: CompareResult) -> str:
    """The comparison as a text table (what ``membench compare`` prints)."""
    from pipeline.report.summary import text_table

    lines = [
        f"A: {result.run_a}",
        f"B: {result.run_b}",
        "paired on questions scored in both runs; B-A > 0: B better. McNemar exact (binary; b/c = questions only "
        f"A / only B got right) or paired bootstrap (means; seed {result.seed}, {result.resamples} resamples).",
        "failed A/B: questions both runs attempted that A / B failed (not compared); failures as wrong: each run's "
        f"value on those questions with its failures counted wrong; {REVERSED_MARK}: that order differs.",
        *libraries_lines(result),
        "",
        text_table(HEADERS, [_cells(r) for r in result.rows]),
    ]
    reversed_rows = [r for r in result.rows if r.order_reversed]
    if reversed_rows:
        lines.append(
            f"\n{len(reversed_rows)} row(s) where the failure rates reverse the order of A and B: "
            + "; ".join(f"{r.dataset} {r.system} {r.reader} {r.metric}" for r in reversed_rows)
        )
    return "\n".join(lines)


SIGNIFICANT = 0.05  # the p-value under which a difference is coloured (better / worse)


def _row_html(r: CompareRow) -> str:
    """One table row: the better of A and B in bold, the difference coloured when p < 0.05."""
    cells = [html.escape(c) for c in _cells(r)]
    a, b, diff = 5, 6, 7  # value_a, value_b, B-A in HEADERS order
    if r.value_a != r.value_b:
        best = b if r.value_b > r.value_a else a
        cells[best] = f"<b>{cells[best]}</b>"
    cls = "same"
    if r.p_value < SIGNIFICANT and r.diff:
        cls = "better" if r.diff > 0 else "worse"
    if r.order_reversed:
        cells[-1] = f'<span class="reversed">{cells[-1]}</span>'
    tds = [f'<td class="{cls}">{c}</td>' if i == diff else f"<td>{c}</td>" for i, c in enumerate(cells)]
    return f'<tr class="{cls}">' + "".join(tds) + "</tr>"


def render_html(result: CompareResult, report_href: str | None = None) -> str:
    """A self-contained page (no scripts, no server): the table with the better run of each row in
    bold and significant differences coloured, and a link back to run B's report when it has one."""
    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in HEADERS)
    body = "".join(_row_html(r) for r in result.rows)
    back = f'<p><a href="{esc(report_href)}">&larr; back to the report of run B</a></p>' if report_href else ""
    better = sum(r.p_value < SIGNIFICANT and r.diff > 0 for r in result.rows)
    worse = sum(r.p_value < SIGNIFICANT and r.diff < 0 for r in result.rows)
    libraries = (
        f'<p class="reversed">{esc(LIBRARIES_HEAD)}</p><ul>'
        + "".join(f"<li>{esc(line)}</li>" for line in result.libraries)
        + "</ul>"
        if result.libraries
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>membench compare</title>
<style>body{{font-family:sans-serif;margin:1.5em;font-size:14px}} table{{border-collapse:collapse;font-size:13px}}
th,td{{border:1px solid #ccc;padding:3px 7px}} th{{background:#f0f0f0}}
td.better{{background:#d9f2df;color:#0a6b2a;font-weight:700}}
td.worse{{background:#f9dcdc;color:#a00020;font-weight:700}} td.same{{color:#666}}
.key span{{padding:1px 6px;border-radius:3px}} .reversed{{color:#a00020;font-weight:700}}</style></head><body>
{back}<h1>membench compare</h1>
<p>A: <code>{esc(str(result.run_a))}</code><br>B: <code>{esc(str(result.run_b))}</code></p>{libraries}
<p class="key">{len(result.rows)} rows: <span class="better" style="background:#d9f2df">B better ({better})</span>
<span style="background:#f9dcdc">B worse ({worse})</span> at p &lt; {SIGNIFICANT}; grey: no significant
difference. The better value of A and B is in bold.</p>
<p>Paired on the questions scored in both runs; B-A &gt; 0 means B is better. Binary metrics: McNemar's exact
test (b / c = questions only A / only B got right). Mean metrics: paired bootstrap of the mean difference
(seed {result.seed}, {result.resamples} resamples), 95 % percentile interval. "only A/B": questions scored in one
run only (not compared). "failed A/B": questions both runs attempted (scored or failed) that A / B failed (an
answer, a judgment or an unparseable verdict); "failures as wrong A/B": each run's value on those questions with its
failures counted wrong; <span class="reversed">{REVERSED_MARK}</span>: those values order A and B the other way
round ({sum(r.order_reversed for r in result.rows)} row(s)).</p>
<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
</body></html>
"""


COMPARE_DIR = "compare"  # under RUN_B: its report.html links every page found here


def default_html_path(result: CompareResult) -> Path:
    """``RUN_B/compare/<RUN_A folder name>.html``."""
    return result.run_b / COMPARE_DIR / f"{result.run_a.name or 'run_a'}.html"


def html_path(result: CompareResult, given: str) -> Path:
    """Where ``--html [PATH]`` writes: the default page, an absolute PATH as given, a relative one in
    ``RUN_B/compare/``. Why not the working directory: the page belongs beside the results it compares
    (RUN_B's report links the pages there), wherever ``membench`` was typed."""
    if not given:
        return default_html_path(result)
    path = Path(given).expanduser()
    return path if path.is_absolute() else result.run_b / COMPARE_DIR / path


def write_html(result: CompareResult, path: Path) -> Path:
    """Write the page; in RUN_B/compare/ it links back to RUN_B's report.html."""
    path.parent.mkdir(parents=True, exist_ok=True)
    in_run_b = path.resolve().parent == (result.run_b / COMPARE_DIR).resolve()
    path.write_text(render_html(result, "../report.html" if in_run_b else None), encoding="utf-8")
    return path
