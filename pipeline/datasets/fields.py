"""Typed access to fields of a raw JSON record, raising ``RecordError`` that names the field.

Why: every loader must turn "missing" and "wrong type" into a record-level failure naming the exact
field path (``qa[3].category``), never into a KeyError deep inside the converter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pipeline.core.partitions import KeyRegistry
from pipeline.core.records import ParsedRecord
from pipeline.datasets.base import KeyConflict, RecordContext, RecordError
from pipeline.datasets.sources import UnreadableRecord

Kinds = type | tuple[type, ...]

_JSON_TYPE = {dict: "object", list: "array", str: "string", int: "integer", float: "number", bool: "boolean"}


def json_type(value: object) -> str:
    """JSON name of a parsed value's type (for error messages)."""
    if value is None:
        return "null"
    return _JSON_TYPE.get(type(value), type(value).__name__)


def _names(kinds: Kinds) -> str:
    ks = kinds if isinstance(kinds, tuple) else (kinds,)
    return " or ".join(_JSON_TYPE.get(k, k.__name__) for k in ks)


def check_type(value: object, kinds: Kinds, field: str) -> Any:
    """``value`` if it has one of ``kinds`` (a JSON boolean is never accepted as a number)."""
    ks = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(value, bool) and bool not in ks:
        raise RecordError(field, f"expected {_names(kinds)}, got boolean")
    if not isinstance(value, ks):
        raise RecordError(field, f"expected {_names(kinds)}, got {json_type(value)}")
    return value


def as_object(value: object, field: str) -> Mapping[str, Any]:
    """``value`` as a JSON object."""
    return check_type(value, dict, field)


def required(obj: Mapping[str, Any], name: str, kinds: Kinds, path: str = "") -> Any:
    """A field that must be present, non-null and of one of ``kinds``."""
    field = f"{path}{name}"
    if name not in obj:
        raise RecordError(field, "missing required field")
    value = obj[name]
    if value is None:
        raise RecordError(field, "required field is null")
    return check_type(value, kinds, field)


def optional(obj: Mapping[str, Any], name: str, kinds: Kinds, path: str = "") -> Any:
    """A field that may be absent or null (-> None), else of one of ``kinds``."""
    value = obj.get(name)
    return None if value is None else check_type(value, kinds, f"{path}{name}")


def string_list(obj: Mapping[str, Any], name: str, path: str = "") -> list[str]:
    """A required array whose items are all strings."""
    items = required(obj, name, list, path)
    for i, item in enumerate(items):
        check_type(item, str, f"{path}{name}[{i}]")
    return items


def answer_text(value: object, field: str, ctx: RecordContext) -> str:
    """Gold answer as text: strings kept, numbers converted and counted (``integer_answer``)."""
    check_type(value, (str, int, float), field)
    if isinstance(value, str):
        return value
    kind = "integer_answer" if isinstance(value, int) else "numeric_answer"
    ctx.issue(kind, field, str(value), "converted to text")
    return str(value)


def same_length(field_a: str, a: list[Any], field_b: str, b: list[Any]) -> None:
    """Parallel arrays (ids / dates / sessions) must line up."""
    if len(a) != len(b):
        raise RecordError(field_b, f"has {len(b)} items but {field_a} has {len(a)}")


QuestionParser = Callable[[RecordContext, Mapping[str, Any], str, str], ParsedRecord]


def parse_keyed_record(ctx: RecordContext, raw: Any, keys: KeyRegistry, parse: QuestionParser) -> ParsedRecord:
    """A record carrying ``question_id`` -> ParsedRecord via ``parse``, or a failure naming the field.

    Why shared: MC10 and LongMemEval records are keyed the same way; a bad record must fail only
    its question (with its partition key once the id is known), identically in both loaders.
    """
    if isinstance(raw, UnreadableRecord):
        return ctx.failure(RecordError("<json>", raw.reason), None)
    try:
        obj = as_object(raw, "<record>")
        qid = required(obj, "question_id", str)
    except RecordError as err:
        return ctx.failure(err, None)
    ctx.record_id = qid
    try:
        key = ctx.key_for(keys, qid)
    except KeyConflict as err:
        return ctx.conflict_failure(err)
    try:
        return parse(ctx, obj, qid, key)
    except RecordError as err:
        return ctx.failure(err, key)
