"""Pure parts of the LLM client: backoff, Retry-After, completion parsing, URL redaction."""

from __future__ import annotations

import json
import random

import pytest

from pipeline.llm.protocol import MalformedReply, backoff_delay, parse_completion, parse_retry_after, safe_url


class _Extreme(random.Random):
    """uniform() returns its lower or upper bound: pins the jitter range exactly."""

    def __init__(self, high: bool) -> None:
        super().__init__(0)
        self.high = high

    def uniform(self, a: float, b: float) -> float:
        return b if self.high else a


@pytest.mark.parametrize(
    ("attempt", "base", "cap", "low", "high"),
    [
        (1, 1.0, 30.0, 0.5, 1.0),  # ceiling 1
        (2, 1.0, 30.0, 1.0, 2.0),  # ceiling 2
        (3, 1.0, 30.0, 2.0, 4.0),  # ceiling 4
        (10, 1.0, 30.0, 15.0, 30.0),  # 512 capped at 30
        (4, 0.01, 30.0, 0.04, 0.08),  # ceiling 0.08
        (5, 0.0, 30.0, 0.0, 0.0),
    ],
)
def test_backoff_delay_bounds(attempt: int, base: float, cap: float, low: float, high: float) -> None:
    assert backoff_delay(attempt, base, cap, _Extreme(False)) == pytest.approx(low)
    assert backoff_delay(attempt, base, cap, _Extreme(True)) == pytest.approx(high)
    assert low <= backoff_delay(attempt, base, cap, random.Random(7)) <= high


HTTP_DATE = "Wed, 21 Oct 2015 07:28:00 GMT"  # = 1445412480 epoch seconds


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("2", 2.0),
        ("0.25", 0.25),
        ("-3", 0.0),
        ("soon", None),
        ("inf", None),
        ("nan", None),
        (HTTP_DATE, 10.0),  # now = date - 10 s
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=1445412470.0) == expected


def test_parse_retry_after_date_in_the_past_is_zero() -> None:
    assert parse_retry_after(HTTP_DATE, now=1445412490.0) == 0.0


def _body(content: object, usage: object = None, finish: str = "stop") -> str:
    data: dict[str, object] = {
        "model": "srv-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
    }
    if usage is not None:
        data["usage"] = usage
    return json.dumps(data)


def test_parse_completion_reads_text_usage_finish_and_model() -> None:
    c = parse_completion(_body("Paris", {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13}))
    assert (c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason, c.served_model) == (
        "Paris",
        12,
        1,
        "stop",
        "srv-model",
    )


@pytest.mark.parametrize(
    "usage",
    [None, {}, {"prompt_tokens": None}, {"prompt_tokens": True, "completion_tokens": -1}, "n/a"],
)
def test_parse_completion_missing_or_bogus_usage_is_none(usage: object) -> None:
    c = parse_completion(_body("ok", usage))
    assert c.prompt_tokens is None and c.completion_tokens is None


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("<html>oops", "not JSON"),
        ("[1, 2]", "JSON list"),
        ('{"error": {"message": "model overloaded"}}', "model overloaded"),
        ('{"choices": []}', "no choices[0]"),
        ('{"choices": [{"message": {"role": "assistant"}}]}', "not text"),
        (_body(None, finish="tool_calls"), "finish_reason='tool_calls'"),
        (_body(""), "empty completion"),
        (_body("  \n", finish="length"), "finish_reason='length'"),
    ],
)
def test_parse_completion_rejects_unusable_bodies(body: str, needle: str) -> None:
    with pytest.raises(MalformedReply) as exc:
        parse_completion(body)
    assert needle in str(exc.value)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:s3cret@api.example.com:8443/v1?key=abc#frag", "https://api.example.com:8443/v1"),
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
    ],
)
def test_safe_url_drops_credentials_and_query(url: str, expected: str) -> None:
    assert safe_url(url) == expected
