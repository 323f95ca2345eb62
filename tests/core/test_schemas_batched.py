"""Canonical checks in bounded memory keep the guarantees of a whole-table pandera check
(issue 11 item 6): every row is checked, uniqueness holds across row groups."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.records import CANONICAL_SCHEMAS
from pipeline.core.schemas import validate_table_file


def _turns(n: int) -> list[dict[str, object]]:
    return [
        {
            "dataset": "d",
            "session_key": f"s{i // 3}",
            "turn_id": f"s{i // 3}:{i % 3}",
            "position": i % 3,
            "speaker": "user",
            "role": "user",
            "text": f"turn {i}",
            "has_answer": False,
            "source_id": None,
            "caption": None,
        }
        for i in range(n)
    ]


def _write(path: Path, rows: list[dict[str, object]], group: int = 4) -> Path:
    pq.write_table(pa.Table.from_pylist(rows, schema=CANONICAL_SCHEMAS["turns"]), path, row_group_size=group)
    return path


def test_clean_table_passes_and_counts_every_row(tmp_path: Path) -> None:
    result = validate_table_file(_write(tmp_path / "t.parquet", _turns(30)), "turns", batch_rows=3)
    assert result.passed and result.rows == 30


def test_duplicate_across_row_groups_is_caught(tmp_path: Path) -> None:
    rows = _turns(30)
    rows[25]["turn_id"] = rows[1]["turn_id"]  # rows 1 and 25 sit in different row groups
    result = validate_table_file(_write(tmp_path / "t.parquet", rows), "turns", batch_rows=3)
    assert not result.passed and result.failure_cases is not None
    case = result.failure_cases.iloc[0]
    assert case["check"] == "unique(turn_id)" and case["failure_case"] == rows[1]["turn_id"] and case["n"] == 2


def test_bad_value_in_a_late_batch_names_its_row_in_the_file(tmp_path: Path) -> None:
    rows = _turns(30)
    rows[27]["role"] = "system"
    result = validate_table_file(_write(tmp_path / "t.parquet", rows), "turns", batch_rows=3)
    assert not result.passed and result.failure_cases is not None
    bad = result.failure_cases[result.failure_cases["column"] == "role"]
    assert bad["failure_case"].tolist() == ["system"] and bad["index"].tolist() == [27]
