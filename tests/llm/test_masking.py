"""API-key masking of stored error text (issue 11 item 7): table-driven over the ways servers echo."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.protocol import MASK, mask_secret

KEY = "sk-proj-Q7hZ2mKx9TfW4bLp8RvN3cYd6Ja1Ue5G"


def _leaks(text: str, key: str = KEY) -> list[str]:
    """Every 6-character piece of the key still readable (case-insensitive) in ``text``."""
    low, k = text.lower(), key.lower()
    return [k[i : i + 6] for i in range(len(k) - 5) if k[i : i + 6] in low and not k[i : i + 6].startswith("sk-pr")]


@pytest.mark.parametrize(
    ("label", "text"),
    [
        ("verbatim", f"Incorrect API key provided: {KEY}."),
        ("upper-cased", f"INVALID KEY {KEY.upper()}"),
        ("lower-cased", f"invalid key {KEY.lower()}!"),
        ("minus one character", f"key {KEY[:20] + KEY[21:]} rejected"),
        ("minus the last character", f"key {KEY[:-1]} rejected"),
        ("server-side elision", f"Incorrect API key provided: {KEY[:12]}**********{KEY[-6:]}x"),
        ("quoted in JSON", f'{{"error": {{"message": "bad key \\"{KEY}\\""}}}}'),
        ("inside a URL", f"GET https://h/v1?key={KEY}&x=1 failed"),
        ("twice", f"{KEY} and again {KEY.swapcase()}"),
        ("one character changed", f"key {KEY[:15]}Z{KEY[16:]}"),
    ],
)
def test_key_variants_are_masked(label: str, text: str) -> None:
    masked = mask_secret(text, KEY)
    assert MASK in masked, label
    assert _leaks(masked) == [], (label, masked)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("echo: Authorization: Bearer other-token-123", "echo: Authorization: Bearer ***"),
        ("{'authorization': 'Basic dXNlcjpwYXNz'}", "{'authorization': 'Basic ***'}"),
        ('headers {"Authorization": "Bearer abc.def"}', 'headers {"Authorization": "Bearer ***"}'),
        ("x-api-key=zzz-999 sent", "x-api-key=*** sent"),
        ("got Bearer abcdef0123 here", "got Bearer *** here"),
        ("proxy-authorization: Token t0k", "proxy-authorization: Token ***"),
    ],
)
def test_credential_echoes_are_masked_whatever_the_key(text: str, expected: str) -> None:
    assert mask_secret(text, None) == expected
    assert mask_secret(text, KEY) == expected


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("HTTP 500: upstream timed out after 30 s", KEY),
        ("HTTP 400: maximum context length is 8192 tokens", KEY),
        ("the key is sk-other-unrelated-value", KEY),
        ("connection refused by localhost", "no-key"),
    ],
)
def test_unrelated_text_is_kept(text: str, secret: str) -> None:
    assert mask_secret(text, secret) == text


def test_short_key_is_masked_whole_and_case_insensitively() -> None:
    assert mask_secret("bad key LOCAL-KEY1 here", "local-key1") == "bad key *** here"
    assert mask_secret("a local-ke fragment stays", "local-key1") == "a local-ke fragment stays"


def test_resource_masks_before_truncating(tmp_path: Path) -> None:
    llm = OpenAIChatClient(base_url="http://127.0.0.1:9/v1", model="m", api_key=KEY, cache_dir=str(tmp_path))
    try:
        text = llm._clean("x" * 1990 + " " + KEY.upper())
        assert _leaks(text) == [] and KEY.upper()[:8] not in text
        assert llm._clean(f"HTTP 401: {KEY[1:]}") == "HTTP 401: ***"
    finally:
        llm.close()
