"""Integrity flags beside the numbers they qualify (the ``integrity_flags`` view, pipeline/provenance/manifest.py).

Why beside the number and not in a section of their own: a reader copies the number, not the
page; "sliced: 20 of 500 questions" must sit next to the accuracy it qualifies, and "top_k ≥
haystack" next to the retrieval numbers of the system whose retrieval was the whole haystack.
"""

from __future__ import annotations

import html
from typing import Any

from pipeline.catalog.manifest import FLAG_FULL_HAYSTACK, FLAG_ISOLATION_LEAK

STYLE = (
    "white-space:nowrap;background:#fff3cd;border:1px solid #d9a400;border-radius:3px;padding:0 4px;"
    "font-size:11px;color:#6b4e00"
)


def badge(text: str, title: str) -> str:
    """A small flag label (inline style: the report's CSS is left as it is)."""
    return f' <span class="flag" style="{STYLE}" title="{html.escape(title)}">{html.escape(text)}</span>'


def _rows(data: Any, dataset: str) -> list[dict[str, Any]]:
    return [r for r in data.rows("integrity_flags") if r.get("dataset") == dataset]


def dataset_flags(data: Any, dataset: str) -> str:
    """The dataset's own flags (sliced, failed questions) as one line, or "" when there are none."""
    flags = [r for r in _rows(data, dataset) if r.get("system") is None]
    if not flags:
        return ""
    badges = "".join(badge(str(r["message"]), f"integrity flag {r['flag']} (view integrity_flags)") for r in flags)
    return f'<p class="note">qualifies every number of this dataset:{badges}</p>'


def system_badges(data: Any, dataset: str) -> dict[str, str]:
    """system -> its badges: retrieval that ranked the whole haystack ("top_k ≥ haystack: equals full
    context", with counts in the tooltip) and a leak found by ``membench check-isolation``."""
    out: dict[str, str] = {}
    for r in _rows(data, dataset):
        if not r.get("system"):
            continue
        if r.get("flag") == FLAG_FULL_HAYSTACK:
            share = "" if r["n_affected"] == r["n_of"] else f" ({r['n_affected']} of {r['n_of']} questions)"
            out[r["system"]] = out.get(r["system"], "") + badge(f"top_k ≥ haystack: equals full context{share}",
                                                                 str(r["message"]))  # fmt: skip
        elif r.get("flag") == FLAG_ISOLATION_LEAK:
            out[r["system"]] = out.get(r["system"], "") + badge("leaks across haystacks", str(r["message"]))
    return out
