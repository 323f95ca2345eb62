"""Retrieval latency per question, p50 / p95 per memory system, on the dataset page's retrieval
table (issue 14 item 5; the percentiles themselves are the retrieval_report view's, tested in
tests/dagster/test_report_assets.py)."""

from __future__ import annotations

from typing import Any

from pipeline.catalog.report import ALL_TYPES
from pipeline.report.html import latency_ms, retrieval_summary


def _row(system: str, level: str, p50: float | None, p95: float | None, **kw: Any) -> dict[str, Any]:
    return {
        "system": system,
        "level": level,
        "type_raw": ALL_TYPES,
        "n_scored": 20,
        "n_excluded": 1,
        "n_failed": 0,
        "retrieval_latency_p50_s": p50,
        "retrieval_latency_p95_s": p95,
        **kw,
    }


def test_latency_ms_formats_whole_milliseconds() -> None:
    assert latency_ms(0.0304, 0.0496) == "30 / 50"
    assert latency_ms(None, None) == "– / –"


def test_retrieval_table_shows_latency_per_system() -> None:
    rows = [
        _row("hybrid", "session", 0.031, 0.0494, recall_any_at_10=0.9),
        _row("hybrid", "turn", 0.5, 0.9),  # same retrievals: the session row is the one shown
        _row("rag", "turn", None, None),
        _row("hybrid", "session", 9.0, 9.0, type_raw="multi-session"),  # per-type rows are not pooled
    ]
    html = retrieval_summary(rows)
    assert "<th>retrieval ms p50 / p95</th>" in html
    hybrid = html.split("<tr><td>hybrid</td>")[1].split("</tr>")[0]
    rag = html.split("<tr><td>rag</td>")[1].split("</tr>")[0]
    assert hybrid.endswith("<td class=num>31 / 49</td>")
    assert rag.endswith("<td class=num>– / –</td>")
