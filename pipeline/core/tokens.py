"""Token counting used for budgets and reports.

Definition (pinned, named ``regex_word_punct``): one token per run of word characters and one per
punctuation character, ``len(re.findall(r"\\w+|[^\\w\\s]", text))``. Why not a model tokenizer:
readers differ (any OpenAI-compatible model), the count must be identical offline and online,
and this estimate is within ~10-25 % of BPE counts on English chat text. The LLM's own reported
usage is recorded separately for cost.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

TOKEN_COUNT_DEFINITION = "regex_word_punct"
_WORD_CHAR = re.compile(r"\w")
_ONE_CHAR_TOKEN = re.compile(r"[^\w\s]")
_TOKEN = re.compile(rf"{_WORD_CHAR.pattern}+|{_ONE_CHAR_TOKEN.pattern}")
# each ASCII code's class under the two patterns above, asked of the patterns themselves
_ASCII_WORD = np.array([_WORD_CHAR.fullmatch(chr(code)) is not None for code in range(128)])
_ASCII_ONE = np.array([_ONE_CHAR_TOKEN.fullmatch(chr(code)) is not None for code in range(128)])
VECTOR_MIN_CHARS = 160  # an ASCII text this long is counted by numpy (shorter: the regex is faster)
KNOWN_MIN_CHARS = 4096  # shorter texts are counted again: a lookup would cost about as much
_KNOWN_MAX = 64
_known: OrderedDict[str, int] = OrderedDict()  # long texts whose count is known, most recent last
_known_lock = threading.Lock()


def count_tokens(text: str | None) -> int:
    """Number of tokens of ``text`` under the ``regex_word_punct`` definition."""
    if not text:
        return 0
    if len(text) >= KNOWN_MIN_CHARS:
        with _known_lock:
            known = _known.get(text)
        if known is not None:
            return known
    if len(text) >= VECTOR_MIN_CHARS and text.isascii():
        return _count_ascii(text)
    return len(_TOKEN.findall(text))


def _count_ascii(text: str) -> int:
    """``count_tokens`` of a non-empty ASCII text: its runs of word characters plus its one-char tokens.

    Why: the regex builds a string per token, and the context budget counts every ranked unit it
    keeps (~8k tokens a question); classifying the text's bytes at once is 1.5-4x faster on texts
    over ``VECTOR_MIN_CHARS``. The same count by definition: ``\\w+`` matches each maximal run of
    word characters and ``[^\\w\\s]`` each other non-space character, and an ASCII character's
    class is the patterns' own answer for it (``_ASCII_WORD``, ``_ASCII_ONE``).
    """
    codes = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    word = _ASCII_WORD[codes]
    runs = np.count_nonzero(word[1:] > word[:-1]) + int(word[0])
    return int(runs + np.count_nonzero(_ASCII_ONE[codes]))


def count_each(texts: Sequence[str]) -> list[int]:
    """``count_tokens`` of each of ``texts``, the ASCII ones counted in one pass over them joined.

    Why: a context budget counts its ranked units one after the other, most of them short turns
    (where the regex per text costs more than one numpy pass over a few dozen of them). Joined by a
    newline, which is no token and ends a word, each text's count is the token starts inside it.
    """
    counts = [0 if t.isascii() else count_tokens(t) for t in texts]
    at = [i for i, t in enumerate(texts) if t and t.isascii()]
    joined = "\n".join(texts[i] for i in at)
    if len(joined) < VECTOR_MIN_CHARS:
        for i in at:
            counts[i] = count_tokens(texts[i])
        return counts
    codes = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    word = _ASCII_WORD[codes]
    starts = _ASCII_ONE[codes]  # a new array: a one-char token starts where it stands
    starts[1:] |= word[1:] > word[:-1]  # a word starts after a non-word character
    starts[0] |= word[0]
    before = np.concatenate(([0], np.cumsum(starts)))  # token starts before each position
    lengths = np.fromiter((len(texts[i]) for i in at), dtype=np.int64, count=len(at))
    begins = np.cumsum(lengths + 1) - lengths - 1
    for i, n in zip(at, (before[begins + lengths] - before[begins]).tolist(), strict=True):
        counts[i] = n
    return counts


def note_count(text: str, tokens: int) -> None:
    """Remember that ``text`` holds ``tokens`` tokens, a count its producer summed from its pieces.

    Why: a memory's context (~8k tokens) is counted by the budget that builds it, piece by piece
    (pipeline/memory/context.py, tested equal to ``count_tokens`` of the whole), and then again by
    the stage that stores it; the second count finds it here. Only the last few long texts are kept.
    """
    if len(text) < KNOWN_MIN_CHARS:
        return
    with _known_lock:
        _known[text] = tokens
        _known.move_to_end(text)
        while len(_known) > _KNOWN_MAX:
            _known.popitem(last=False)
