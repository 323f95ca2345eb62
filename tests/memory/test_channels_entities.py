"""The rule-based entity extractor (what counts as an entity for the graph's entity edges)."""

from __future__ import annotations

import pytest

from pipeline.memory.channels.entities import extract_entities

CASES = [
    ("Thanks! Can you recommend places in New York City?", {"new york city"}),
    ("I'm going with John's sister.", {"john"}),
    ("Caroline went to the LGBTQ support group in 2023", {"caroline", "lgbtq", "2023"}),
    ("I finished 'The Nightingale' by Kristin Hannah", {"the nightingale", "nightingale", "kristin hannah"}),
    ('What about the "Run for the Cure" event?', {"run for the cure"}),
    ("It cost $350 on May 8th", {"$350", "may 8th", "8th"}),
    ("Hi there, I like it. Yes, thanks!", set()),
    ("", set()),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_extract_entities(text: str, expected: set[str]) -> None:
    assert set(extract_entities(text)) == expected
