"""Where a wrong answer was lost: one cause per wrong verdict, in the pinned order."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.metrics.losses import (
    CAUSE_NOT_RETRIEVED,
    CAUSE_RETRIEVED_WRONG,
    CAUSE_STRING_RIGHT,
    CAUSE_UNKNOWN,
    loss_cause,
    loss_cause_sql,
)


@pytest.mark.parametrize(
    ("string_right", "recall", "cause"),
    [
        (True, 0.0, CAUSE_STRING_RIGHT),  # the string metric first, whatever the retrieval
        (True, None, CAUSE_STRING_RIGHT),
        (False, 0.0, CAUSE_NOT_RETRIEVED),
        (False, 0.5, CAUSE_RETRIEVED_WRONG),
        (False, 1.0, CAUSE_RETRIEVED_WRONG),
        (False, None, CAUSE_UNKNOWN),
    ],
)
def test_loss_cause(string_right: bool, recall: float | None, cause: str) -> None:
    assert loss_cause(string_right, recall) == cause
    sql = loss_cause_sql(str(string_right).lower(), "NULL::DOUBLE" if recall is None else str(recall))
    assert duckdb.sql(f"SELECT {sql}").fetchall() == [(cause,)]
