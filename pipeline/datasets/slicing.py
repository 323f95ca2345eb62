"""Dataset slices: the first N questions (``limit``), at most N per question type
(``limit_per_type``) and/or named questions (``question_ids``), applied to a loader's record stream.

Why stratified: the first N questions of LoCoMo or LongMemEval are not a sample of the benchmark
(LoCoMo's first conversation, LongMemEval's file order), so a "first 50" slice can hold no
temporal or multi-session question at all; N per type keeps every type present and comparable.
The slice is a pure filter over the stream, so the canonical conversion and the partition-key
listing (which must name exactly the same questions) apply the same rule.

Counting: a record with a question counts toward its type and the total; a load failure with a
partition key counts toward the total only (its type is unknown); other records pass through.
``question_ids`` (the dataset's own ids, ``questions.question_id``) is applied first: a measured
slice on a slow endpoint can name the questions whose haystacks it can afford. A load failure is
kept when its record id is named (its question id may be what failed to parse).
Records are kept in file order; the stream stops at ``limit`` (with ``limit_per_type`` alone it
reads to the end, since a later record may be of a type not yet full).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Iterator

from pipeline.core.records import ParsedRecord


def sliced(
    records: Iterable[ParsedRecord],
    limit: int | None = None,
    limit_per_type: int | None = None,
    question_ids: Collection[str] | None = None,
) -> Iterator[ParsedRecord]:
    """``records`` limited to ``question_ids``, ``limit`` questions in total and ``limit_per_type`` per type."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 (got {limit})")
    if limit_per_type is not None and limit_per_type < 1:
        raise ValueError(f"limit_per_type must be >= 1 (got {limit_per_type})")
    per_type: Counter[str] = Counter()
    total = 0
    wanted = None if question_ids is None else frozenset(question_ids)
    for rec in records:
        if limit is not None and total >= limit:
            return
        if wanted is not None and not _named(rec, wanted):
            continue
        if rec.question is not None:
            t = rec.question.type_raw
            if limit_per_type is not None and per_type[t] >= limit_per_type:
                continue
            per_type[t] += 1
            total += 1
        elif rec.failure is not None and rec.failure.partition_key:
            total += 1
        yield rec


def _named(rec: ParsedRecord, wanted: frozenset[str]) -> bool:
    """Whether ``rec`` is one of the named questions (records with neither part pass through)."""
    if rec.question is not None:
        return rec.question.question_id in wanted
    if rec.failure is not None and rec.failure.partition_key:
        return rec.failure.record_id in wanted
    return True
