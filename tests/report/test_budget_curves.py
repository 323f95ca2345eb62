"""The accuracy-vs-context plot joins a system's retrieval cut-offs into one budget curve."""

from __future__ import annotations

from pipeline.report.plots import accuracy_vs_context, budget_curves


def _row(system: str, reader: str, tokens: float | None, value: float | None) -> dict[str, object]:
    return {"system": system, "reader": reader, "mean_context_tokens": tokens, "headline_value": value,
            "ci_low": None, "ci_high": None}  # fmt: skip


ROWS = [
    _row("rag", "llm", 2000.0, 0.6),
    _row("rag@5", "llm", 400.0, 0.4),
    _row("rag@10", "llm", 900.0, 0.55),
    _row("rag@5", "offline", 400.0, 0.2),  # another reader: its own curve (of one point: none)
    _row("full", "llm", 9000.0, 0.7),  # one depth only: no curve
    _row("rag@20", "llm", None, 0.5),  # no context size: not a point
]


def test_one_curve_per_system_and_reader_ordered_by_context() -> None:
    assert budget_curves(ROWS) == [[(400.0, 0.4), (900.0, 0.55), (2000.0, 0.6)]]


def test_plot_renders_points_and_curves() -> None:
    png = accuracy_vs_context(ROWS, "d: metric vs context tokens")
    assert len(png) > 1000
