"""Date parsing for the source formats (raw strings are always kept next to the parsed value).

Why per-format parsers instead of a fuzzy parser: a fuzzy parser silently guesses day/month order;
these formats are fixed, so anything else is reported as an ``unparseable_date`` quality issue.
All results are naive datetimes (the sources carry no time zone; ISO values with an offset are
converted to UTC).
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache

LOCOMO_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
BEAM_FORMAT = "%B-%d-%Y"  # BEAM time anchors: "March-15-2024"
_LONGMEMEVAL = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})\s*$")


@lru_cache(maxsize=65536)
def parse_locomo_datetime(raw: str) -> dt.datetime | None:
    """LoCoMo ``session_<n>_date_time``: ``"1:56 pm on 8 May, 2023"``."""
    try:
        return dt.datetime.strptime(raw.strip(), LOCOMO_FORMAT)
    except ValueError:
        return None


@lru_cache(maxsize=65536)
def parse_longmemeval_datetime(raw: str) -> dt.datetime | None:
    """LongMemEval dates: ``"2023/04/10 (Mon) 23:07"`` (the weekday is informative only)."""
    m = _LONGMEMEVAL.match(raw)
    if not m:
        return None
    year, month, day, hour, minute = (int(g) for g in m.groups())
    try:
        return dt.datetime(year, month, day, hour, minute)
    except ValueError:
        return None


@lru_cache(maxsize=65536)
def parse_beam_datetime(raw: str) -> dt.datetime | None:
    """BEAM ``time_anchor``: ``"March-15-2024"`` (a day, no time)."""
    try:
        return dt.datetime.strptime(raw.strip(), BEAM_FORMAT)
    except ValueError:
        return None


def format_beam(value: dt.datetime) -> str:
    """Inverse of ``parse_beam_datetime`` (used by the sample generator)."""
    return f"{value.strftime('%B')}-{value.day:02d}-{value.year}"


@lru_cache(maxsize=65536)
def parse_iso_datetime(raw: str) -> dt.datetime | None:
    """MC10 ``haystack_session_datetimes`` (ISO-like); falls back to the LoCoMo/LongMemEval forms."""
    text = raw.strip()
    try:
        value = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return parse_locomo_datetime(text) or parse_longmemeval_datetime(text)
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def format_longmemeval(value: dt.datetime) -> str:
    """Inverse of ``parse_longmemeval_datetime`` (used by the sample generator)."""
    return value.strftime("%Y/%m/%d (%a) %H:%M")


def format_locomo(value: dt.datetime) -> str:
    """Inverse of ``parse_locomo_datetime`` without zero padding, as in the source files."""
    hour = value.hour % 12 or 12
    ampm = "am" if value.hour < 12 else "pm"
    return f"{hour}:{value.minute:02d} {ampm} on {value.day} {value.strftime('%B')}, {value.year}"
