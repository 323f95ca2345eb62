"""Report plots as base64 PNG (matplotlib, Agg backend), so report.html is one self-contained file.

Why PNG inline rather than an interactive JS chart: the report must open from a file, offline,
in any browser, years later; a few static plots with error bars say what matters.
"""

from __future__ import annotations

import base64
import functools
import io
import textwrap
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from pipeline.core.units import base_system
from pipeline.metrics.retrieval import metric_column
from pipeline.report.glossary import reader_display

Row = dict[str, Any]

# Why these sizes: the report's pages are 1,200 px wide; a chart is shown at its own size (one per
# row, never scaled down at 1280 px), so 11 pt text at 100 dpi is ~15 px on screen.
DPI = 100
MAX_WIDTH_IN = 8.6  # plus the legend beside it: under 1,170 px
STYLE: dict[str, Any] = {
    "font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "xtick.labelsize": 10, "ytick.labelsize": 10,
    "legend.fontsize": 10,
}  # fmt: skip
F = TypeVar("F", bound=Callable[..., Any])


def styled(fn: F) -> F:
    """``fn`` draws under the report's text sizes (set per chart, matplotlib's global settings untouched)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with plt.rc_context(STYLE):  # type: ignore[arg-type]
            return fn(*args, **kwargs)

    return cast(F, wrapper)


def to_base64_png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def series_label(row: Row) -> str:
    return f"{row['system']} / {reader_display(row['reader'], row.get('reader_label'))}"


def type_label(row: Row) -> str:
    raw, name = str(row["type_raw"]), str(row["type_name"])
    return name if raw == name else f"{name} ({raw})"


def _yerr(row: Row) -> tuple[float, float]:
    """95 % interval half-widths below/above the value (Wilson, or bootstrap for mean scores)."""
    value, lo, hi = row.get("headline_value"), row.get("ci_low"), row.get("ci_high")
    if value is None or lo is None or hi is None:
        return 0.0, 0.0
    return max(0.0, value - lo), max(0.0, hi - value)


@styled
def accuracy_by_type(rows: Sequence[Row], title: str) -> str:
    """Grouped bars: one group per question type, one bar per system/reader, Wilson 95 % error bars."""
    types = sorted({type_label(r) for r in rows})
    series = sorted({series_label(r) for r in rows})
    by_key = {(type_label(r), series_label(r)): r for r in rows}
    width = 0.8 / max(1, len(series))
    width = min(MAX_WIDTH_IN, max(6.0, 1.1 * len(types) * max(1, len(series)) ** 0.5 + 2))
    fig, ax = plt.subplots(figsize=(width, 4.6))
    for i, name in enumerate(series):
        xs, ys, lo, hi = [], [], [], []
        for j, t in enumerate(types):
            r = by_key.get((t, name))
            if r is None or r.get("headline_value") is None:
                continue
            below, above = _yerr(r)
            xs.append(j - 0.4 + width * (i + 0.5))
            ys.append(r["headline_value"])
            lo.append(below)
            hi.append(above)
        ax.bar(xs, ys, width=width, yerr=[lo, hi], capsize=3, label=name)
    ax.set_xticks(range(len(types)), [textwrap.fill(t, 18) for t in types], rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("value (error bars: 95 % interval)")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return to_base64_png(fig)


@styled
def context_figure(rows: Sequence[Row], title: str) -> Figure:
    """One point per system/reader (and per retrieval cut-off ``<system>@<c>``): mean context tokens (x)
    vs the metric (y) with its 95 % interval; the cut-offs of one system joined by a grey line (its
    budget curve); each point labelled with its system, labels moved apart until none overlaps another."""
    fig, ax = plt.subplots(figsize=(7.0, 4.4))
    labels = []
    for r in rows:
        x, y = r.get("mean_context_tokens"), r.get("headline_value")
        if x is None or y is None:
            continue
        below, above = _yerr(r)
        ax.errorbar([x], [y], yerr=[[below], [above]], fmt="o", capsize=3, label=series_label(r))
        labels.append(ax.annotate(r["system"], (x, y), textcoords="offset points", xytext=(6, 4)))
    for curve in budget_curves(rows):  # a system read at several depths: its points joined, by context size
        ax.plot([x for x, _ in curve], [y for _, y in curve], color="0.55", linewidth=1, zorder=0)
    ax.set_xscale("symlog", linthresh=100)
    ax.set_xlabel("mean context tokens per question (regex_word_punct)")
    ax.set_ylabel("value (error bars: 95 % interval)")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(alpha=0.3)
    spread_labels(fig, labels)
    return fig


def budget_curves(rows: Sequence[Row]) -> list[list[tuple[float, float]]]:
    """(context tokens, value) points of each (system, reader) read at more than one depth (the system
    and its cut-offs ``<system>@<c>``), ordered by context size: one curve each."""
    groups: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in rows:
        x, y = r.get("mean_context_tokens"), r.get("headline_value")
        if x is not None and y is not None:
            groups.setdefault((base_system(r["system"]), r["reader"]), []).append((float(x), float(y)))
    return [sorted(points) for _, points in sorted(groups.items()) if len(points) > 1]


def spread_labels(fig: Figure, labels: Sequence[Any], max_rounds: int = 50) -> None:
    """Move overlapping annotations up (in steps of their own height) until no two overlap."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    for _ in range(max_rounds):
        boxes = [a.get_window_extent(renderer) for a in labels]
        moved = False
        for i in range(len(labels)):
            for j in range(i):
                if boxes[i].overlaps(boxes[j]):
                    dx, dy = labels[i].xyann
                    labels[i].xyann = (dx, dy + boxes[i].height * 72 / fig.dpi + 1)
                    boxes[i] = labels[i].get_window_extent(renderer)
                    moved = True
        if not moved:
            return


def accuracy_vs_context(rows: Sequence[Row], title: str) -> str:
    """The context-size scatter (context_figure) as a PNG."""
    return to_base64_png(context_figure(rows, title))


def ks_in(rows: Sequence[Row], metric: str) -> list[int]:
    """The cut-offs k the rows hold for ``metric`` (a config's retrieval_k), ascending."""
    prefix = f"{metric}_at_"
    return sorted(
        {int(c[len(prefix) :]) for r in rows for c in r if c.startswith(prefix) and c[len(prefix) :].isdigit()}
    )


@styled
def recall_at_k(rows: Sequence[Row], metric: str, title: str) -> str:
    """A retrieval metric against k (one line per system), all question types pooled."""
    ks = ks_in(rows, metric)
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    for r in sorted(rows, key=lambda r: r["system"]):
        ys = [r.get(metric_column(metric, k)) for k in ks]
        pts = [(k, y) for k, y in zip(ks, ys, strict=True) if y is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{r['system']} (n={r['n_scored']})")
    ax.set_xscale("log")
    ax.set_xticks(list(ks), [str(k) for k in ks])
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric}@k")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(alpha=0.3)
    return to_base64_png(fig)
