"""The note under a question-type table whose rows carry two names: why the dataset's own label differs.

Why: LoCoMo-MC10 labels its questions by LoCoMo category, but names the categories otherwise than
the official LoCoMo scoring code, whose names membench reports (pipeline/datasets/categories.py).
Matched question by question against LoCoMo (pipeline/datasets/crosscheck.py), MC10's ``single_hop``
questions are LoCoMo's category 1, which the official code scores as multi-hop, and so on: a row
reading "multi-hop (single_hop)" is not a bug, and the page says so where the two names meet.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.datasets.categories import LOCOMO_CATEGORY_NAMES, MC10_UNVERIFIED_PREFIX

CATEGORY_OF_NAME = {name: number for number, name in LOCOMO_CATEGORY_NAMES.items()}


def relabelled(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, int]]:
    """(dataset label, LoCoMo name, LoCoMo category) of every type whose own label is not LoCoMo's name."""
    pairs = {(str(r["type_raw"]), str(r["type_name"])) for r in rows}
    return sorted(
        (raw, name, CATEGORY_OF_NAME[name])
        for raw, name in pairs
        if name in CATEGORY_OF_NAME and not raw.isdigit() and raw.replace("_", "-") != name
    )


def type_label_note(rows: Sequence[Mapping[str, Any]]) -> str:
    """The note for a question-type table of ``rows`` (empty when no label differs from its name)."""
    pairs = relabelled(rows)
    unmatched = sorted({str(r["type_raw"]) for r in rows if str(r["type_name"]).startswith(MC10_UNVERIFIED_PREFIX)})
    if not pairs and not unmatched:
        return ""
    renamed = [f"its {raw} questions are LoCoMo category {cat}, which the official code scores as {name}"
               for raw, name, cat in pairs]  # fmt: skip
    text = (
        "Question type: LoCoMo's category name as the official LoCoMo scoring code scores it (membench's one "
        "mapping), matched question by question with the LoCoMo questions; in brackets the dataset's own label. "
        + (f"The dataset names LoCoMo's categories otherwise: {'; '.join(renamed)}." if renamed else "")
    )
    if unmatched:
        text += f" Labels shown as {MC10_UNVERIFIED_PREFIX}... ({', '.join(unmatched)}) matched no LoCoMo question."
    return f'<p class="note">{html.escape(text)}</p>'
