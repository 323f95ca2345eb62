"""A small offline entity extractor feeding the memory graph's entity edges.

Why rule-based: the graph only needs "these two memories talk about the same thing"; a NER model
would mean a model download (not allowed at run time) and slow ingestion. Extracted, lower-cased:

- proper-noun phrases: runs of Capitalized words (``New York``, ``Caroline``), minus common
  sentence starters and stop words (``The``, ``I``, ``Thanks``) when they stand alone;
- acronyms: ``LGBTQ``, ``NASA`` (2+ capitals);
- quoted titles: text between quotes, 1-6 words (``'The Nightingale'``);
- numbers of 2+ digits and dates (``2023``, ``$350``, ``15th``, ``May 8``).

Frequent "entities" (a speaker's name on every turn) are not filtered here but by the graph's
document-frequency cap, which knows the whole memory.
"""

from __future__ import annotations

import calendar
import re
from functools import cache

_OWN_STOP = frozenset(
    """i i'm im i've i'd i'll hi hey hello thanks thank yes yeah no ok okay sure please also so well
    oh wow great good nice cool hmm um actually anyway btw just can could would should will may might
    what when where why how who which whose whom is are was were do does did have has had be been
    let lets let's here there this that these those it its it's my mine your yours our we you he she
    they them their his her me us if but and or not as at by for from in into of on onto to with
    about after before also although because since though while yet maybe perhaps however
    """.split()  # noqa: SIM905 - a word list reads better as text
)


@cache
def _stop_words() -> frozenset[str]:
    """bm25s' English stop words and ours; bm25s (with scipy) is imported on first use, not by every
    definitions load (0.14 s of CPU)."""
    import bm25s.stopwords

    return frozenset(bm25s.stopwords.STOPWORDS_EN) | _OWN_STOP


_MONTHS = [m.lower() for m in calendar.month_name if m] + [m.lower() for m in calendar.month_abbr if m]

_WORD = r"[A-ZÀ-Þ][^\W\d_]*(?:['’\-][^\W\d_]+)*"  # a Capitalized word, letters in any script
_CAP_RUN = re.compile(rf"\b{_WORD}(?:(?:\s+(?:of|the|for|de))*\s+{_WORD})*")
_ACRONYM = re.compile(r"\b[A-Z]{2,}[0-9]*\b")
_QUOTED = re.compile(r"(?<!\w)[\"“‘']([^\"“”‘’'\n]{2,60}?)[\"”’'](?!\w)")
_NUMBER = re.compile(r"[$€£]?\b\d[\d,.]*\d(?:st|nd|rd|th|%|k)?\b|\b\d(?:st|nd|rd|th)\b")
_DATE = re.compile(r"\b(?:" + "|".join(m.capitalize() for m in _MONTHS) + r")\.?\s+\d{1,2}(?:st|nd|rd|th)?\b")


def _clean(phrase: str) -> str:
    phrase = re.sub(r"['’]s\b", "", phrase)  # possessive: "John's" -> "john"
    return re.sub(r"\s+", " ", phrase.strip(" '’-")).lower()


def _proper_nouns(text: str) -> set[str]:
    found: set[str] = set()
    for m in _CAP_RUN.finditer(text):
        words = [w for w in _clean(m.group(0)).split() if w]
        while words and words[0] in _stop_words():  # "The Nightingale" -> "nightingale"; "Thanks" -> ()
            words = words[1:]
        if not words or (len(words) == 1 and (words[0] in _stop_words() or len(words[0]) < 2)):
            continue
        found.add(" ".join(words))
    return found


def _quoted(text: str) -> set[str]:
    out = set()
    for m in _QUOTED.finditer(text):
        phrase = _clean(m.group(1))
        if 1 <= len(phrase.split()) <= 6 and phrase not in _stop_words():
            out.add(phrase)
    return out


def extract_entities(text: str) -> frozenset[str]:
    """Lower-cased entity keys of ``text`` (see the module docstring for what counts)."""
    if not text:
        return frozenset()
    found = _proper_nouns(text)
    found |= {m.group(0).lower() for m in _ACRONYM.finditer(text)}
    found |= {_clean(m.group(0)) for m in _DATE.finditer(text)}
    found |= {m.group(0).lower().rstrip(".,") for m in _NUMBER.finditer(text)}
    found |= _quoted(text)
    return frozenset(e for e in found if e and e not in _stop_words())
