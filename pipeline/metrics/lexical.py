"""Text normalisation and phrase lists shared by the lexical judges (and the offline reader).

Why pinned constants: a lexical metric is only comparable across runs if its stop words and
abstention phrases never change silently; they are part of the metric's definition.
"""

from __future__ import annotations

import re
import string

_WORD = re.compile(r"\w+")
_PUNCT = str.maketrans("", "", string.punctuation)
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})

# English stop words (keyword-overlap metric of seed 001 and the offline reader's tie-break).
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t don didn doesn isn wasn
    """.split()  # noqa: SIM905 - a word list reads better as text
)

# Phrases that mean "the information is not available" (LongMemEval lexical abstention check).
# The official LoCoMo category-5 check is narrower: LOCOMO_NOT_AVAILABLE below.
ABSTENTION_PHRASES: tuple[str, ...] = (
    "no information available",
    "not mentioned",
    "never mentioned",
    "no mention",
    "does not mention",
    "doesn't mention",
    "did not mention",
    "didn't mention",
    "not available",
    "no information",
    "not enough information",
    "insufficient information",
    "not specified",
    "not provided",
    "not stated",
    "not discussed",
    "cannot be answered",
    "can't be answered",
    "cannot answer",
    "can't answer",
    "unable to answer",
    "unanswerable",
    "don't know",
    "do not know",
)

# The official LoCoMo category-5 rule (snap-research/locomo task_eval/evaluation.py):
# correct iff 'no information available' or 'not mentioned' occurs in the lower-cased output.
LOCOMO_NOT_AVAILABLE: tuple[str, ...] = ("no information available", "not mentioned")


def words(text: str) -> list[str]:
    """Lower-cased ``\\w+`` tokens."""
    return _WORD.findall(text.lower())


def keywords(text: str) -> list[str]:
    """Seed-001 keywords: lower-cased word tokens, stop words removed, tokens < 2 chars dropped."""
    return [w for w in words(text) if len(w) >= 2 and w not in STOP_WORDS]


def normalize_plain(text: str) -> str:
    """Lower-case, punctuation removed, articles a/an/the dropped, whitespace collapsed."""
    text = text.lower().translate(_APOSTROPHES).translate(_PUNCT)
    return " ".join(w for w in text.split() if w not in ("a", "an", "the"))


def says_not_available(text: str, phrases: tuple[str, ...] = ABSTENTION_PHRASES) -> bool:
    """True when ``text`` (case-insensitive, curly apostrophes folded) contains one of ``phrases``."""
    folded = " ".join(text.lower().translate(_APOSTROPHES).split())
    return any(p in folded for p in phrases)
