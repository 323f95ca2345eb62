"""Loader registry and the two kinds of input error every loader distinguishes.

Why two kinds: a benchmark of ~2,000 questions must not be sunk by one malformed record, but a file
that is not what it claims to be (not JSON, not gzip, wrong top-level shape, duplicate or colliding
question ids) cannot be trusted at all.

File-level (raise ``DatasetFileError``; nothing is written for that dataset, its earlier outputs
stay in place, and the other datasets load as usual): file missing, not gzip although named
``.gz``, truncated or corrupt compression, not valid JSON (including a non-UTF-8 byte in a JSON
array: the parser cannot resume after it), top level not an array of records, a JSON Lines file
none of whose lines is readable.
Record-level (yield ``ParsedRecord(question=None, failure=LoadFailure(...))``; the question is
recorded as failed with its partition key when its id is known, every other question loads):
  a record that is not an object, a required field missing, a field of the wrong JSON type,
  a value out of range (unknown LoCoMo category, choice index outside the choices), lists of
  parallel fields with different lengths, a JSON Lines line that is not valid JSON or not UTF-8.
Key conflicts (a duplicate ``question_id``, or two ids sanitizing to one partition key) are
record-level too, and fail *every* record sharing the key: the later one is yielded as a
``KeyConflictFailure`` (no key of its own), and the converter withdraws the earlier question,
recording it as failed under the key. Why both: nothing says which of two records is the right
one, and keeping the first would make the question depend on the file's record order.
Known quirks (handled, counted as ``QualityIssue`` rows, never an error) are listed in the README
of the shared datasets and in each loader's docstring.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.core.partitions import KeyRegistry, PartitionKeyCollision, partition_key
from pipeline.core.records import LoadFailure, ParsedRecord, QualityIssue

# a generator, not just an iterator: a conversion stopped early (limit, error) closes it (contextlib.closing)
LoaderFn = Callable[[Path, str], Generator[ParsedRecord, None, None]]

# Bump when a loader's output changes for the same input: the converter's manifest then forces a
# re-conversion instead of skipping an unchanged source file.
LOADER_VERSION = "3"  # 2: questions.evidence_raw (LoCoMo evidence as given); 3: questions.difficulty, .rubric


def describe(file: str | Path, record_index: int | None, record_id: str | None, field: str | None, message: str) -> str:
    """One message format for every input error: file, record index, record id, field."""
    index = "-" if record_index is None else str(record_index)
    return f"{file}: record {index} (id {record_id or '-'}), field {field or '-'}: {message}"


class DatasetFileError(ValueError):
    """The whole file is unusable; the message names file, record index, record id and field."""

    def __init__(
        self,
        file: str | Path,
        message: str,
        *,
        record_index: int | None = None,
        record_id: str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = str(file)
        self.record_index = record_index
        self.record_id = record_id
        self.field = field
        self.reason = message
        super().__init__(describe(file, record_index, record_id, field, message))


class RecordError(ValueError):
    """One record is unusable (missing field, wrong type): only its question(s) fail."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"field {field}: {message}")


class KeyConflict(RecordError):
    """A question id whose partition key is already taken (duplicate id or sanitization clash)."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__("question_id", message)


@dataclass(frozen=True)
class KeyConflictFailure(LoadFailure):
    """A failed record whose key belongs to an earlier record, which must be withdrawn too.

    ``partition_key`` stays None (the key is the earlier record's); ``conflict_key`` names it.
    """

    conflict_key: str = ""


@dataclass
class RecordContext:
    """Where a loader is in the file; builds issues and failures that name the record."""

    dataset: str
    file: str
    index: int
    record_id: str
    issues: list[QualityIssue] = field(default_factory=list)

    def issue(
        self, kind: str, field: str, raw_value: object, action: str, count: int = 1, record_id: str | None = None
    ) -> None:
        """Count a handled quirk (``count`` aggregates repeats inside this record)."""
        raw = raw_value if isinstance(raw_value, str) else repr(raw_value)
        self.issues.append(
            QualityIssue(self.dataset, kind, record_id or self.record_id, field, raw[:500], action, count)
        )

    def take_issues(self) -> tuple[QualityIssue, ...]:
        """The issues collected so far (cleared, so each is attached to one record only)."""
        out = tuple(self.issues)
        self.issues.clear()
        return out

    def failure(self, err: RecordError, partition_key: str | None, record_id: str | None = None) -> ParsedRecord:
        """A failed question: recorded with its key (when known) so it shows up as failed."""
        rid = record_id or self.record_id
        message = describe(self.file, self.index, rid, err.field, err.message)
        failure = LoadFailure(self.dataset, self.file, self.index, rid, partition_key, err.field, message)
        return ParsedRecord(question=None, issues=self.take_issues(), failure=failure)

    def key_for(self, keys: KeyRegistry, question_id: str) -> str:
        """Partition key of ``question_id``; raises ``KeyConflict`` when the key is taken."""
        try:
            return keys.key_for(question_id)
        except PartitionKeyCollision as exc:
            key = partition_key(self.dataset, question_id)
            raise KeyConflict(key, f"{exc}; every record with this key fails") from None

    def conflict_failure(self, err: KeyConflict, record_id: str | None = None) -> ParsedRecord:
        """The later record of a key conflict: failed without a key of its own (the converter
        withdraws the earlier record holding ``err.key``)."""
        rid = record_id or self.record_id
        message = describe(self.file, self.index, rid, err.field, err.message)
        failure = KeyConflictFailure(self.dataset, self.file, self.index, rid, None, err.field, message, err.key)
        return ParsedRecord(question=None, issues=self.take_issues(), failure=failure)


def unknown_id(index: int) -> str:
    """Record id used when a record's own id cannot be read."""
    return f"#{index}"
