"""The question-type table of a LoCoMo-MC10 dataset says, on the page, why its own labels differ from
LoCoMo's category names (pipeline/report/types_html.py); a LoCoMo table, labelled by number, says nothing."""

from __future__ import annotations

from typing import Any

from pipeline.report.html import types_by_systems
from pipeline.report.types_html import type_label_note


def _row(raw: str, name: str, n: int = 4) -> dict[str, Any]:
    return {"type_raw": raw, "type_name": name, "system": "rag", "reader": "offline", "reader_label": "offline",
            "n_type_questions": n, "accuracy": 0.5, "headline_value": 0.5, "n_scored": n}  # fmt: skip


# as the cross-check names the sample's MC10 questions (pipeline/datasets/crosscheck.py)
MC10 = [_row("single_hop", "multi-hop"), _row("multi_hop", "temporal"), _row("temporal_reasoning", "open-domain"),
        _row("open_domain", "single-hop"), _row("adversarial", "adversarial")]  # fmt: skip


def test_mc10_labels_are_explained_where_they_meet_locomo_names() -> None:
    note = type_label_note(MC10)
    assert "in brackets the dataset&#x27;s own label" in note
    assert "its single_hop questions are LoCoMo category 1, which the official code scores as multi-hop" in note
    assert "its open_domain questions are LoCoMo category 4, which the official code scores as single-hop" in note
    assert "adversarial questions" not in note  # the same name on both sides needs no word
    table = types_by_systems(MC10, [])
    assert "multi-hop <span class='note'>(single_hop)</span>" in table and table.endswith(note)


def test_unmatched_mc10_labels_are_named() -> None:
    note = type_label_note([_row("single_hop", "mc10:single_hop")])
    assert "Labels shown as mc10:... (single_hop) matched no LoCoMo question." in note


def test_locomo_categories_by_number_need_no_note() -> None:
    rows = [_row("1", "multi-hop"), _row("4", "single-hop")]
    assert type_label_note(rows) == "" and '<p class="note">' not in types_by_systems(rows, [])
