"""HTML section of what the memory products under test spent (view ``product_usage``, pipeline/catalog/products.py).

Why a section of its own: a product's accuracy means little without its price. The reader's
tokens are in the answers tables; this one shows the product's own LLM work while ingesting and
searching, which the answers tables cannot see.
"""

from __future__ import annotations

import html
from typing import Any

from pipeline.report.build import ReportData

HEAD = (
    "system", "haystacks", "sessions", "ingest LLM calls (upstream)", "ingest tokens (prompt + completion)",
    "ingest cost", "s / session (mean, p50)", "searches (failed)", "search LLM calls (upstream)",
    "search tokens", "search latency p50 / p95",
)  # fmt: skip


def _esc(value: Any) -> str:
    return "–" if value is None else html.escape(str(value))


def _n(value: Any) -> str:
    return "–" if value is None else f"{int(value):,}"


def _s(value: Any) -> str:
    return "–" if value is None else f"{float(value):.2f} s"


def _ms(value: Any) -> str:
    return "–" if value is None else f"{float(value) * 1000:.0f} ms"


def _usd(value: Any) -> str:
    return "–" if value is None else f"${float(value):.4f}"


def _cells(r: dict[str, Any]) -> list[str]:
    failed = f" ({_n(r['n_searches_failed'])} failed)" if r.get("n_searches_failed") else ""
    return [
        _esc(r["system"]), _n(r["n_haystacks"]), _n(r["n_sessions"]),
        f"{_n(r['ingest_llm_calls'])} ({_n(r['ingest_upstream_llm_calls'])})",
        f"{_n(r['ingest_prompt_tokens'])} + {_n(r['ingest_completion_tokens'])}", _usd(r["ingest_cost_usd"]),
        f"{_s(r['ingest_seconds_per_session'])}, {_s(r['ingest_seconds_p50'])}", f"{_n(r['n_searches'])}{failed}",
        f"{_n(r['search_llm_calls'])} ({_n(r['search_upstream_llm_calls'])})",
        f"{_n(r['search_prompt_tokens'])} + {_n(r['search_completion_tokens'])}",
        f"{_ms(r['search_latency_p50_s'])} / {_ms(r['search_latency_p95_s'])}",
    ]  # fmt: skip


def product_section(data: ReportData, dataset: str) -> list[str]:
    """The product usage table of ``dataset`` (empty when no product memory ran on it)."""
    rows = [r for r in data.rows("product_usage") if r["dataset"] == dataset]
    if not rows:
        return []
    th = "".join(f"<th>{html.escape(h)}</th>" for h in HEAD)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in _cells(r)) + "</tr>" for r in rows)
    note = (
        "<p class=\"note\">the memory products' own LLM and embedding work, metered by membench's proxy "
        "(view product_usage): upstream = calls not answered by the LLM cache; cost of upstream calls only; "
        "sessions that completed (a failed session counts when it is ingested again)</p>"
    )
    table = f'<div class="scroll"><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'
    return ["<h2>Memory products: ingestion and search cost</h2>", note, table]
