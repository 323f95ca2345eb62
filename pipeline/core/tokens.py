"""Token counting used for budgets and reports.

Definition (pinned, named ``regex_word_punct``): one token per run of word characters and one per
punctuation character, ``len(re.findall(r"\\w+|[^\\w\\s]", text))``. Why not a model tokenizer:
readers differ (any OpenAI-compatible model), the count must be identical offline and online,
and this estimate is within ~10-25 % of BPE counts on English chat text. The LLM's own reported
usage is recorded separately for cost.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

TOKEN_COUNT_DEFINITION = "regex_word_punct"
_WORD_CHAR = re.compile(r"\w")
_ONE_CHAR_TOKEN = re.compile(r"[^\w\s]")
# the count's tokens: a truncation to a number of tokens cuts after one of them (pipeline/memory/context.py)
TOKEN_PATTERN = re.compile(rf"{_WORD_CHAR.pattern}+|{_ONE_CHAR_TOKEN.pattern}")


def _asked(chars: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(word character, one-character token) for each of ``chars``, asked of the two patterns themselves."""
    word = np.array([_WORD_CHAR.fullmatch(c) is not None for c in chars], dtype=bool)
    one = np.array([_ONE_CHAR_TOKEN.fullmatch(c) is not None for c in chars], dtype=bool)
    return word, one


def _class_table(chars: list[str]) -> np.ndarray:
    """Each of ``chars``' class as one byte: ``WORD_BIT`` when a word character, ``ONE_BIT`` when a
    one-character token (asked of the patterns), so a text's classes take one table lookup, not two."""
    word, one = _asked(chars)
    return word.astype(np.uint8) * WORD_BIT | one.astype(np.uint8) * ONE_BIT


WORD_BIT, ONE_SHIFT = 1, 1  # a character's class byte (``_class_table``): bit 0 word, bit 1 one-character token
ONE_BIT = 1 << ONE_SHIFT
_ASCII_CLASSES = _class_table([chr(code) for code in range(128)])  # each ASCII code's class
VECTOR_MIN_CHARS = 160  # a text (or texts counted together) this long is counted by numpy; shorter: the regex
KNOWN_MIN_CHARS = 4096  # shorter texts are counted again: a lookup would cost about as much
_KNOWN_MAX = 64
_known: OrderedDict[str, int] = OrderedDict()  # long texts whose count is known, most recent last
_known_lock = threading.Lock()
_SURROGATES = np.uint16(0xD800)  # UTF-16 units 0xD800-0xDFFF: halves of a pair, or a lone surrogate
_SURROGATE_UNITS = 0x800


def count_tokens(text: str | None) -> int:
    """Number of tokens of ``text`` under the ``regex_word_punct`` definition."""
    if not text:
        return 0
    if len(text) >= KNOWN_MIN_CHARS:
        with _known_lock:
            known = _known.get(text)
        if known is not None:
            return known
    if len(text) >= VECTOR_MIN_CHARS:
        return int(np.count_nonzero(_token_starts(text)))
    return len(TOKEN_PATTERN.findall(text))


@functools.cache
def _bmp_classes() -> np.ndarray:
    """The class byte of each code point below 0x10000, asked of the patterns: made at the first
    non-ASCII text counted (~40 ms), so a text of many distinct characters (CJK) costs a table
    lookup per character, not a pattern call per distinct one."""
    return _class_table([chr(code) for code in range(0x10000)])


def _classes(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Per character of ``text``: (a word character, a one-character token), as the patterns say.

    Why per character: ``\\w+`` matches each maximal run of word characters and ``[^\\w\\s]`` each
    other non-space character, so the count follows from each character's class alone. Classes
    come from tables (ASCII, then the BMP); a code point beyond is asked of the patterns once per text.
    Why UTF-16 first: a text of the BMP only (most non-ASCII chat text: quotes, dashes, accents,
    CJK) is one 16-bit unit per character, half the bytes of UTF-32 and indexes the BMP table as
    it is; a text with a unit of a surrogate pair (or a lone surrogate) is read as UTF-32.
    """
    if text.isascii():
        classes = _ASCII_CLASSES[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    else:
        classes = _non_ascii_classes(text)
    return (classes & WORD_BIT).view(bool), (classes >> ONE_SHIFT).view(bool)  # new arrays, 0 or 1 each


def _non_ascii_classes(text: str) -> np.ndarray:
    """The class bytes of a non-ASCII text: from its UTF-16 units when it has no surrogate, else UTF-32."""
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    if np.any((units - _SURROGATES) < _SURROGATE_UNITS):  # uint16 wraps: true only inside the range
        return _wide_classes(text)
    classes: np.ndarray = _bmp_classes()[units]
    return classes


def _wide_classes(text: str) -> np.ndarray:
    """The class bytes of a text with code points beyond the BMP (or lone surrogates): one UTF-32
    unit per character, the BMP's from the table, each one beyond asked of the patterns once."""
    wide = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)  # one per character
    classes = _bmp_classes()[np.minimum(wide, 0xFFFF)]
    beyond = wide > 0xFFFF
    if beyond.any():
        others, where = np.unique(wide[beyond], return_inverse=True)
        classes[beyond] = _class_table([chr(code) for code in others.tolist()])[where]
    return classes


def _token_starts(text: str) -> np.ndarray:
    """Where in ``text`` (non-empty) a token starts: a one-character token, or a word character after a
    non-word one. Why: the regex builds a string per token; on a text of ``VECTOR_MIN_CHARS`` or more,
    classifying its characters at once is 1.5-4x faster, and the context budget counts ~8k tokens a question.
    """
    word, starts = _classes(text)  # arrays of their own: ``starts`` is completed in place
    starts[1:] |= word[1:] > word[:-1]
    starts[0] |= word[0]
    return starts


def count_each(texts: Sequence[str]) -> list[int]:
    """``count_tokens`` of each of ``texts``, counted in one pass over them joined.

    Why: a context budget counts its ranked units one after the other, most of them short turns
    (where the regex per text costs more than one numpy pass over a few dozen of them). Joined by a
    newline, which is no token and ends a word, each text's count is the token starts inside it.
    """
    joined = "\n".join(texts)
    if len(joined) < VECTOR_MIN_CHARS:
        return [count_tokens(t) for t in texts]
    # where tokens start (~1 character in 5), each text's count the starts between its ends: a
    # search in them, not a running count of every character (~45M for LongMemEval_S's contexts)
    starts = np.flatnonzero(_token_starts(joined))
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    ends = np.cumsum(lengths + 1) - 1
    counts: list[int] = (np.searchsorted(starts, ends) - np.searchsorted(starts, ends - lengths)).tolist()
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
