"""Row checks of the per-question stage tables, run as asset checks after each stage.

Why here and not only as an Arrow schema: Arrow fixes the column types, but the invariants every
report relies on (a status is ``ok`` or ``failed``; a failed row carries its error and an ok row
none; a row belongs to the partition file it is in) are about values.
"""

from __future__ import annotations

import pandas as pd
import pandera.errors
import pandera.pandas as pa

from pipeline.core.status import STATUS_FAILED, STATUSES

STAGE_ROWS = pa.DataFrameSchema(
    {
        "partition_key": pa.Column(str, pa.Check.str_matches(r"^[A-Za-z0-9_-]+$")),
        "dataset": pa.Column(str),
        "question_id": pa.Column(str),
        "unit": pa.Column(str),
        "unit_hash": pa.Column(str),
        "status": pa.Column(str, pa.Check.isin(list(STATUSES))),
        "error": pa.Column(str, nullable=True),
        "duration_s": pa.Column(float, pa.Check.ge(0), nullable=True),
    },
    checks=[
        pa.Check(
            lambda df: (df["status"] == STATUS_FAILED) == df["error"].notna(),
            error="a failed row must carry its error and an ok row none",
        ),
    ],
    unique=["partition_key", "unit"],
    strict=False,
    name="stage_rows",
)


CHECKED_COLUMNS = list(STAGE_ROWS.columns)  # all the checks read: the payload (contexts, answers) is not loaded


def check_rows(df: pd.DataFrame) -> str | None:
    """None when the rows satisfy STAGE_ROWS, else a markdown table of the first failure cases."""
    try:
        STAGE_ROWS.validate(df, lazy=True)
    except pandera.errors.SchemaErrors as exc:
        return str(exc.failure_cases.head(20).to_markdown(index=False))
    return None
