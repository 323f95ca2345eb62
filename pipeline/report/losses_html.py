"""The report's "where the wrong answers were lost" section (view ``wrong_answer_causes``).

Why per system and per type: the same accuracy can be lost in retrieval (fix the memory), in
reading (fix the reader or its prompt) or in judging (the string metrics call it right); the
split tells which, and the per-type rows tell where.
"""

from __future__ import annotations

import html
from typing import Any

from pipeline.catalog.losses import ALL_TYPES

Row = dict[str, Any]
COLUMNS = (
    ("n_evidence_not_retrieved", "evidence never retrieved"),
    ("n_retrieved_answered_wrong", "retrieved, answered wrong"),
    ("n_string_right_judged_wrong", "right by string metrics, judged wrong"),
    ("n_evidence_unknown", "no evidence to look for"),
)


def _cells(r: Row) -> str:
    n = r["n_wrong"] or 0
    return f"<td class=num>{n}</td>" + "".join(
        f"<td class=num>{r[c]}<span class=sub>{100 * r[c] / n:.0f} %</span></td>" if n else "<td class=num>0</td>"
        for c, _ in COLUMNS
    )


def loss_section(data: Any, dataset: str, metric: str | None) -> list[str]:
    """One table per (system, reader) of ``metric`` (the dataset's main metric): all types, then each type."""
    rows = [r for r in data.rows("wrong_answer_causes") if r["dataset"] == dataset and r["metric"] == metric]
    if not rows:
        return []
    head = "<th>question type</th><th>wrong</th>" + "".join(f"<th>{html.escape(h)}</th>" for _, h in COLUMNS)
    parts = [
        f"<h2>Where the wrong answers were lost ({html.escape(str(metric))})</h2>",
        '<p class="note">Each wrong verdict has one cause, tried in this order: a string metric (exact match, gold '
        "contained) calls the same answer right; no gold evidence turn reached the reader; gold evidence was in the "
        "reader's context and the answer is still wrong; the question has no scored evidence. SQL: "
        "<code>SELECT * FROM wrong_answer_causes</code></p>",
    ]
    for system, reader in sorted({(r["system"], r["reader"]) for r in rows}):
        mine = [r for r in rows if (r["system"], r["reader"]) == (system, reader)]
        mine.sort(key=lambda r: (r["type_raw"] != ALL_TYPES, str(r["type_name"])))
        body = "".join(
            f"<tr><td>{'<b>all</b>' if r['type_raw'] == ALL_TYPES else html.escape(str(r['type_name']))}</td>"
            f"{_cells(r)}</tr>"
            for r in mine
        )
        parts.append(f"<h3>{html.escape(system)} / {html.escape(reader)}</h3>")
        parts.append(f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>')
    return parts
