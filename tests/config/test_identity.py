"""Every config field has one declared class (pipeline/config/identity.py), and the endpoint rules."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.config.identity import (
    CLASSES,
    ENDPOINT_IDENTITY_FIELDS,
    FIELDS,
    IDENTITY,
    differing,
    endpoint_identity,
    schema_paths,
    undeclared_fields,
)
from pipeline.config.model import LLMConfig


def test_every_field_of_the_schema_has_a_class_and_no_class_names_a_missing_field() -> None:
    assert undeclared_fields() == []
    assert sorted(set(FIELDS) - set(schema_paths())) == []


@pytest.mark.parametrize("path", sorted(FIELDS))
def test_each_rule_has_a_known_class_and_says_why(path: str) -> None:
    rule = FIELDS[path]
    assert rule.cls in CLASSES and len(rule.why) > 10
    assert not rule.feeds or rule.cls == IDENTITY  # only identity feeds stored rows


@pytest.mark.parametrize("block", ["llm", "judge_llm"])
def test_the_endpoint_identity_fields_are_the_identity_class_of_both_blocks(block: str) -> None:
    declared = {p.split(".", 1)[1] for p, r in FIELDS.items() if p.startswith(f"{block}.") and r.cls == IDENTITY}
    assert declared == set(ENDPOINT_IDENTITY_FIELDS)


BASE = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m")


@pytest.mark.parametrize(
    ("changes", "fields", "expected"),
    [
        ({}, ENDPOINT_IDENTITY_FIELDS, {"model": "m"}),  # defaults add nothing but the model
        ({}, ("temperature", "max_tokens"), {}),
        ({"temperature": 0.7}, ("temperature", "max_tokens"), {"temperature": 0.7}),
        ({"temperature": 0.7}, ("max_tokens",), {}),  # a field the calls do not take
        (
            {"max_tokens": 64, "model_tag": "q4"},
            ENDPOINT_IDENTITY_FIELDS,
            {"model": "m", "max_tokens": 64, "model_tag": "q4"},
        ),
        ({"timeout_s": 5.0, "base_url": "http://127.0.0.1:8/v1"}, ENDPOINT_IDENTITY_FIELDS, {"model": "m"}),
    ],
)
def test_endpoint_identity_holds_the_non_default_identity_settings(
    changes: dict[str, Any], fields: tuple[str, ...], expected: dict[str, Any]
) -> None:
    assert endpoint_identity(BASE.model_copy(update=changes), fields) == expected


def test_endpoint_identity_refuses_an_operational_field() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        endpoint_identity(BASE, ("timeout_s",))


@pytest.mark.parametrize(
    ("stored", "current", "expected"),
    [
        ({"llm.temperature": 0.0}, {"llm.temperature": 0.9}, ["llm.temperature"]),
        ({"a": 1, "b": 2}, {"a": 1, "b": 2}, []),
        ({"a": 1}, {"a": 1, "b": None}, []),  # absent reads as None
        ({"a": 1}, {"b": 2}, ["a", "b"]),
    ],
)
def test_differing_names_the_settings_that_changed(
    stored: dict[str, Any], current: dict[str, Any], expected: list[str]
) -> None:
    assert differing(stored, current) == expected
