"""Pandera schemas of the canonical tables, run as blocking asset checks after loading.

Why: the canonical tables are the contract every later stage trusts; a loader bug (a null id, a
duplicate key, an out-of-range choice index) must stop the run at the stage boundary, before
any embedding or LLM money is spent on bad data.
"""

from __future__ import annotations

import pandera.pandas as pa

_str = pa.Column(str, nullable=False)
_opt_str = pa.Column(str, nullable=True)

QUESTIONS = pa.DataFrameSchema(
    {
        "dataset": _str,
        "question_id": _str,
        "partition_key": pa.Column(str, pa.Check.str_matches(r"^[A-Za-z0-9_-]+$"), unique=True),
        "record_index": pa.Column(int, pa.Check.ge(0)),
        "type_raw": _str,
        "type_name": _str,
        "question": _str,
        "answer": _opt_str,
        "adversarial_answer": _opt_str,
        "choices": pa.Column(object, nullable=True),
        "correct_choice_index": pa.Column(float, pa.Check.in_range(0, 9), nullable=True, coerce=True),
        "question_date_raw": _opt_str,
        "is_abstention": pa.Column(bool),
        "haystack_id": _str,
    },
    checks=[
        pa.Check(
            lambda df: df["answer"].notna() | df["adversarial_answer"].notna() | df["is_abstention"],
            error="a non-abstention question has neither answer nor adversarial_answer",
        ),
        pa.Check(
            lambda df: df["choices"].isna() | df["correct_choice_index"].notna(),
            error="a multiple-choice question lacks correct_choice_index",
        ),
    ],
    strict=False,
    name="questions",
)

SESSIONS = pa.DataFrameSchema(
    {
        "dataset": _str,
        "session_key": pa.Column(str, unique=True),
        "source_session_id": _str,
        "datetime_raw": _opt_str,
        "summary": _opt_str,
        "n_turns": pa.Column(int, pa.Check.ge(0)),
    },
    strict=False,
    name="sessions",
)

TURNS = pa.DataFrameSchema(
    {
        "dataset": _str,
        "session_key": _str,
        "turn_id": pa.Column(str, unique=True),
        "position": pa.Column(int, pa.Check.ge(0)),
        "speaker": _str,
        "role": pa.Column(str, pa.Check.isin(["user", "assistant"])),
        "text": pa.Column(str, nullable=False),
        "has_answer": pa.Column(bool),
        "source_id": _opt_str,
        "caption": _opt_str,
    },
    strict=False,
    name="turns",
)

HAYSTACKS = pa.DataFrameSchema(
    {
        "dataset": _str,
        "haystack_id": _str,
        "position": pa.Column(int, pa.Check.ge(0)),
        "session_key": _str,
        "source_session_id": _str,
    },
    unique=["haystack_id", "position"],
    strict=False,
    name="haystacks",
)

EVIDENCE = pa.DataFrameSchema(
    {
        "dataset": _str,
        "question_id": _str,
        "partition_key": _str,
        "level": pa.Column(str, pa.Check.isin(["turn", "session"])),
        "unit_id": _str,
        "source_id": _opt_str,
    },
    strict=False,
    name="evidence",
)

DATA_QUALITY = pa.DataFrameSchema(
    {
        "dataset": _str,
        "kind": _str,
        "record_id": _opt_str,
        "field": _opt_str,
        "raw_value": _opt_str,
        "action": _str,
        "count": pa.Column(int, pa.Check.ge(1)),
    },
    strict=False,
    name="data_quality",
)

CANONICAL_PANDERA: dict[str, pa.DataFrameSchema] = {
    "questions": QUESTIONS,
    "sessions": SESSIONS,
    "turns": TURNS,
    "haystacks": HAYSTACKS,
    "evidence": EVIDENCE,
    "data_quality": DATA_QUALITY,
}
