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

TOKEN_COUNT_DEFINITION = "regex_word_punct"
_TOKEN = re.compile(r"\w+|[^\w\s]")
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
    return len(_TOKEN.findall(text))


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
