"""``count_tokens``, ``count_each``: every path (regex, numpy over character classes) gives the pinned count.

Why these texts: the numpy path classifies characters one by one, so every ASCII code (the
``\\x1c``-``\\x1f`` separators are whitespace to ``\\s``, ``_`` is a word character) and odd non-ASCII
ones (other spaces, digits and marks, an emoji, a lone surrogate) must sit on both sides of the
``VECTOR_MIN_CHARS`` threshold, at a text's start and end.
"""

from __future__ import annotations

import random
import re

import pytest

from pipeline.core.tokens import VECTOR_MIN_CHARS, count_each, count_tokens

PINNED = re.compile(r"\w+|[^\w\s]")


def pinned_count(text: str) -> int:
    return len(PINNED.findall(text))


def _texts() -> list[str]:
    rng = random.Random(41)
    every_code = "".join(map(chr, range(128)))
    texts = [every_code, every_code[::-1], every_code * 3, "_" * VECTOR_MIN_CHARS, "a" * (VECTOR_MIN_CHARS - 1)]
    near = range(VECTOR_MIN_CHARS - 3, VECTOR_MIN_CHARS + 3)
    texts += ["".join(rng.choice(every_code) for _ in range(n)) for n in near]
    texts += ["".join(rng.choice("ab _.,\x1c\x1f\t\n-'") for _ in range(rng.randrange(1, 600))) for _ in range(300)]
    texts += ["café, naïve — résumé " * 20, "日本語のテキスト。" * 30, "x" * 200 + "é"]
    # other spaces, digits, marks and letters, an emoji, a lone surrogate
    odd = "\u00a0\u2028\u3000\u0663\u01c5\u0301\U0001f600\ud800\u200b\u00b2\u2160é—ß"
    texts += ["".join(rng.choice(odd + "ab _.,\x1c") for _ in range(rng.randrange(1, 500))) for _ in range(200)]
    return texts


@pytest.mark.parametrize("text", _texts())
def test_the_count_is_the_pinned_definition(text: str) -> None:
    assert count_tokens(text) == pinned_count(text)


def test_word_runs_and_one_char_tokens_of_a_long_ascii_text() -> None:
    text = "Hi, I'm Ana_B -- 42 cats!\x1cok " * 10  # 12 tokens a copy: Hi , I ' m Ana_B - - 42 cats ! ok
    assert len(text) >= VECTOR_MIN_CHARS
    assert count_tokens(text) == 12 * 10


def test_each_text_counted_together_is_counted_as_alone() -> None:
    """``count_each``: empty, short, long, non-ASCII and whitespace-only texts side by side, each its own count."""
    texts = _texts()
    rng = random.Random(7)
    mixed = ["", " ", "a", "\x1c", "x.y", *rng.sample(texts, 40), "", "é", "end."]
    for chunk in (mixed, mixed[:3], mixed[3:9], [t for t in mixed if t.isascii()], texts):
        assert count_each(chunk) == [pinned_count(t) for t in chunk]
    assert count_each([]) == []


# code points at the edges of UTF-16's surrogate range (0xD800-0xDFFF) and of the BMP: a text of the BMP
# only is classified from its UTF-16 units, one with a surrogate (a pair's half, a lone one) from UTF-32
EDGES = "\u0080\u00ff\u0100\ud7ff\ue000\ufb01\ufffe\uffff\u00b7\u2019"


@pytest.mark.parametrize("extra", ["", "\U0001f600", "\ud800", "\udfff", "\U00010000\U0010ffff"])
def test_texts_next_to_the_surrogate_range_count_as_pinned(extra: str) -> None:
    rng = random.Random(len(extra))
    texts = ["".join(rng.choice(EDGES + "ab _.,\x1c" + extra) for _ in range(n)) for n in range(150, 400, 7)]
    texts += [EDGES * 20 + extra, extra + EDGES * 20, "a" * VECTOR_MIN_CHARS + extra + "\ud7ff"]
    assert [count_tokens(t) for t in texts] == [pinned_count(t) for t in texts]
    assert count_each(texts) == [pinned_count(t) for t in texts]
