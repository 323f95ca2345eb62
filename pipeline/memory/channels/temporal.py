"""Temporal channel: parse the question's time expression to a window, score units by recency.

Why a hand-written, table-tested parser: the window must be computed relative to the question's
own date (LongMemEval asks "two months ago" on 2023/05/30), offline and deterministically; a
general date library would guess at ambiguous phrases silently. Each rule below is one row of
tests/memory/test_channels_temporal.py.

Windows (closed intervals, both ends datetimes; ``ref`` = question date):

- ``today`` / ``this morning|afternoon|evening``       the day of ref (``tonight`` and, on a
                                                        weekday, ``this weekend`` are the future:
                                                        no window)
- ``yesterday`` / ``last night``                        the day before ref
- ``the day before yesterday``                          ref - 2 days (that day)
- ``N days ago``                                        that day
- ``N weeks ago``                                       ref - 7N days, +- 3 days
- ``N months ago``                                      ref - N months, +- 15 days
- ``N years ago``                                       ref - N years, +- 182 days
  (N: digits, a/an/one..twelve, "a couple of" = 2; "a few" = 2..5 units ago)
- ``the past|last N days|weeks|months|years`` (also ``in the past week``, ``the last few days``)
                                                        [ref - N units, ref]
- ``last week|month|year``                              the previous calendar week (Mon-Sun),
                                                        month or year
- ``last weekend``                                      the Saturday-Sunday before ref's week
- ``this week|month|year|weekend``                      start of the current period .. ref
- ``last|this|past|on|the <weekday>``                   the most recent such day before ref
                                                        (``this``/``the``: today counts); a bare
                                                        or plural weekday ("Sunday mass", "on
                                                        Fridays") is a habit, not a date: none
- ``from|between <Month> to|and|through <Month> [YYYY]`` the months from first to last
- ``[in|of] <Month> [YYYY]``                            that calendar month (without a year: the
                                                        latest such month not after ref)
- ``<Month> <day>[, YYYY]``, ``<day> [of] <Month> [YYYY]``, ``YYYY-MM-DD``, ``YYYY/MM/DD``,
  ``MM/DD/YYYY``                                        that day
- ``[in|during] YYYY`` (1900-2099)                      that calendar year; ``since X`` extends
                                                        any window to ref
- ``last|this <season>``                                meteorological season (northern)

Month names must be capitalized ("may" is a verb). Windows never extend past ref. Several
expressions give several windows; a unit scores if it lies in any of them. No expression =>
the channel abstains (returns no ranking), so it never adds noise to questions without time.
Inside a window: score = exp(-lambda * age_days), lambda = ln 2 / half_life_days.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_DAY = dt.timedelta(days=1)
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a couple": 2,
    "couple of": 2,
}  # fmt: skip
_NUMBER_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_NUM = rf"(\d{{1,3}}|a couple of|a couple|couple of|a few|few|an|a|{_NUMBER_WORDS})"
_UNIT = r"(day|week|month|year)s?"
_MONTHS = [m for m in calendar.month_name if m]
_MONTH_ABBR = {m[:3]: i for i, m in enumerate(_MONTHS, start=1)} | {"Sept": 9}
_ABBR = ["Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sept", "Sep", "Oct", "Nov", "Dec"]
_MONTH_RE = r"(" + "|".join([*_MONTHS, *_ABBR]) + r")\.?"
_WEEKDAYS = [d.lower() for d in calendar.day_name]
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11), "winter": (12, 2)}


@dataclass(frozen=True)
class TimeWindow:
    """A closed time interval matched by ``expression`` in the question."""

    start: dt.datetime
    end: dt.datetime
    expression: str

    def contains(self, ts: dt.datetime, slack: dt.timedelta = dt.timedelta(0)) -> bool:
        return self.start - slack <= ts <= self.end + slack


def _day(d: dt.date | dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime(d.year, d.month, d.day)
    return start, start + _DAY - dt.timedelta(microseconds=1)


def _span(first: dt.date, last: dt.date) -> tuple[dt.datetime, dt.datetime]:
    return _day(first)[0], _day(last)[1]


def _add_months(d: dt.datetime, months: int) -> dt.datetime:
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    return d.replace(year=year, month=month, day=min(d.day, calendar.monthrange(year, month)[1]))


def _month(year: int, month: int) -> tuple[dt.datetime, dt.datetime]:
    return _span(dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1]))


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def _ago(ref: dt.datetime, n: int, unit: str) -> tuple[dt.datetime, dt.datetime]:
    if unit == "day":
        return _day(ref - n * _DAY)
    if unit == "week":
        c = ref - 7 * n * _DAY
        return _span(c - 3 * _DAY, c + 3 * _DAY)
    if unit == "month":
        c = _add_months(ref, -n)
        return _span(c - 15 * _DAY, c + 15 * _DAY)
    c = _add_months(ref, -12 * n)
    return _span(c - 182 * _DAY, c + 182 * _DAY)


def _back(ref: dt.datetime, n: int, unit: str) -> dt.datetime:
    if unit == "day":
        return ref - n * _DAY
    if unit == "week":
        return ref - 7 * n * _DAY
    return _add_months(ref, -n if unit == "month" else -12 * n)


def _units_ago(m: re.Match[str], ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    word, unit = m.group(1).lower(), m.group(2).lower()
    if word in ("a few", "few"):
        return _day(_back(ref, 5, unit))[0], _day(_back(ref, 2, unit))[1]
    return _ago(ref, _count(word), unit)


def _past_n(m: re.Match[str], ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    word = (m.group(1) or "1").lower()
    n = 5 if word in ("few", "a few", "several") else _count(word)
    return _day(_back(ref, n, m.group(2).lower()))[0], ref


def _last_period(m: re.Match[str], ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    unit = m.group(1).lower()
    today = ref.date()
    if unit == "week":
        monday = today - dt.timedelta(days=today.weekday() + 7)
        return _span(monday, monday + 6 * _DAY)
    if unit == "weekend":
        saturday = today - dt.timedelta(days=today.weekday() + 2)
        return _span(saturday, saturday + _DAY)
    if unit == "month":
        prev = _add_months(ref, -1)
        return _month(prev.year, prev.month)
    return _span(dt.date(ref.year - 1, 1, 1), dt.date(ref.year - 1, 12, 31))


def _this_period(m: re.Match[str], ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    unit = m.group(1).lower()
    today = ref.date()
    if unit == "week":
        start = today - dt.timedelta(days=today.weekday())
    elif unit == "weekend":
        if today.weekday() < 5:
            raise ValueError("'this weekend' on a weekday is the coming weekend: nothing remembered there")
        start = today - dt.timedelta(days=today.weekday() - 5)
    elif unit == "month":
        start = today.replace(day=1)
    else:
        start = today.replace(month=1, day=1)
    return _day(start)[0], ref


def _weekday(m: re.Match[str], ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    qualifier, name = (m.group(1) or "").lower(), m.group(2).lower()
    back = (ref.weekday() - _WEEKDAYS.index(name)) % 7
    if back == 0 and qualifier in ("last", "past", "on"):
        back = 7
    return _day(ref - back * _DAY)


def _month_from_name(name: str) -> int:
    return _MONTHS.index(name) + 1 if name in _MONTHS else _MONTH_ABBR[name[:4] if name == "Sept" else name[:3]]


def _latest_year(ref: dt.datetime, month: int, day: int = 1) -> int:
    return ref.year if (month, day) <= (ref.month, ref.day) else ref.year - 1


def _month_year(m: re.Match[str], ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    month = _month_from_name(m.group(1))
    year = int(m.group(2)) if m.group(2) else _latest_year(ref, month)
    return _month(year, month)


def _month_range(m: re.Match[str], ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    first, last = _month_from_name(m.group(1)), _month_from_name(m.group(2))
    end_year = int(m.group(3)) if m.group(3) else _latest_year(ref, last)
    start_year = end_year if first <= last else end_year - 1
    return _month(start_year, first)[0], _month(end_year, last)[1]


def _safe_day(year: int, month: int, day: int) -> tuple[dt.datetime, dt.datetime]:
    return _day(dt.date(year, month, day))


def _month_day(m: re.Match[str], ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    month, day = _month_from_name(m.group(1)), int(m.group(2))
    year = int(m.group(3)) if m.group(3) else _latest_year(ref, month, day)
    return _safe_day(year, month, day)


def _day_month(m: re.Match[str], ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    day, month = int(m.group(1)), _month_from_name(m.group(2))
    year = int(m.group(3)) if m.group(3) else _latest_year(ref, month, day)
    return _safe_day(year, month, day)


def _iso(m: re.Match[str], _ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    return _safe_day(int(m.group(1)), int(m.group(2)), int(m.group(3)))


def _us_date(m: re.Match[str], _ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    return _safe_day(int(m.group(3)), int(m.group(1)), int(m.group(2)))


def _year(m: re.Match[str], _ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    y = int(m.group(1))
    return _span(dt.date(y, 1, 1), dt.date(y, 12, 31))


def _season(m: re.Match[str], ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    qualifier, name = m.group(1).lower(), m.group(2).lower()
    first, last = _SEASONS[name]
    year = ref.year if ref.month >= first else ref.year - 1  # latest season that has started
    if qualifier == "last":
        year -= 1 if (ref.month >= first or (first == 12 and ref.month <= last)) else 0
    if first == 12:  # winter spans the new year: December .. February
        return _month(year, 12)[0], _month(year + 1, 2)[1]
    return _month(year, first)[0], _month(year, last)[1]


_I = re.IGNORECASE
# "the past/last/previous", "past", "previous", or "last" followed by a count ("last 3 weeks");
# bare "last week" is the previous calendar week (next rule), "the last week" the past 7 days
_PAST = rf"(?:the\s+(?:past|last|previous)|past|previous|last(?=\s+(?:\d|a few|few|several|couple|{_NUMBER_WORDS})))"
# (pattern, handler): first match wins for overlapping text; order = most specific first
_RULES: list[tuple[re.Pattern[str], object]] = [
    (re.compile(r"\bthe day before yesterday\b", _I), lambda m, r: _day(r - 2 * _DAY)),
    (re.compile(r"\b(?:yesterday|last night)\b", _I), lambda m, r: _day(r - _DAY)),
    (re.compile(r"\b(?:today|this morning|this afternoon|this evening)\b", _I), lambda m, r: _day(r)),
    (re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", _I), _units_ago),
    (re.compile(rf"\b{_PAST}\s+(?:{_NUM}\s+|several\s+)?{_UNIT}\b", _I), _past_n),
    (re.compile(r"\blast\s+(week|weekend|month|year)\b", _I), _last_period),
    (re.compile(r"\bthis\s+(week|weekend|month|year)\b", _I), _this_period),
    (re.compile(r"\b(last|this|past|on|the)\s+(" + "|".join(_WEEKDAYS) + r")\b", _I), _weekday),
    (re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b"), _iso),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b"), _us_date),
    (
        re.compile(
            rf"\b(?:from|between)\s+{_MONTH_RE}\s+(?:to|and|through|until|till)\s+{_MONTH_RE}(?:,?\s+(\d{{4}}))?"
        ),
        _month_range,
    ),
    (re.compile(rf"\b{_MONTH_RE}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?"), _month_day),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_RE}(?:,?\s+(\d{{4}}))?"), _day_month),
    (re.compile(rf"\b{_MONTH_RE}(?:,?\s+((?:19|20)\d\d))?\b"), _month_year),
    (re.compile(r"\b(?:in|during|of|since|from|by)\s+((?:19|20)\d\d)\b", _I), _year),
    (re.compile(r"\b(last|this)\s+(spring|summer|fall|autumn|winter)\b", _I), _season),
]
_SINCE = re.compile(r"\bsince\s*$", _I)


def parse_time_windows(text: str, ref: dt.datetime) -> list[TimeWindow]:
    """Every time window the expressions of ``text`` denote relative to ``ref`` (maybe none)."""
    taken: list[tuple[int, int]] = []
    windows: list[TimeWindow] = []
    for pattern, handler in _RULES:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            try:
                start, end = handler(m, ref)  # type: ignore[operator]
            except (ValueError, KeyError):  # "February 30", a month name that is not one
                continue
            if _SINCE.search(text[: m.start()]) or m.group(0).lower().startswith("since"):
                end = ref
            taken.append((m.start(), m.end()))
            if start <= ref:
                windows.append(TimeWindow(start, min(end, ref), m.group(0).strip()))
    return sorted(_weekdays_inside(windows), key=lambda w: w.start)


def _weekdays_inside(windows: list[TimeWindow]) -> list[TimeWindow]:
    """A weekday next to a wider window means that weekday inside it ("the Wednesday two months ago").

    Without another window a weekday is the most recent one; with one, each such weekday inside
    the wider windows becomes a one-day window and replaces them (the weekday alone would point
    at last week, the wide window alone would admit every day of the month).
    """
    named = [w for w in windows if w.expression.split()[-1].lower().rstrip("s") in _WEEKDAYS]
    wide = [w for w in windows if w not in named and (w.end - w.start) > _DAY]
    if not named or not wide:
        return windows
    out = [w for w in windows if w not in named and w not in wide]
    for w in named:
        target = _WEEKDAYS.index(w.expression.split()[-1].lower().rstrip("s"))
        for span in wide:
            day = span.start
            while day <= span.end:
                if day.weekday() == target:
                    start, end = _day(day)
                    out.append(TimeWindow(start, min(end, span.end), f"{w.expression} in {span.expression}"))
                day += _DAY
    return out


def decay_rate(half_life_days: float) -> float:
    """lambda of exp(-lambda * age) such that the score halves every ``half_life_days``."""
    if half_life_days <= 0:
        raise ValueError(f"half_life_days must be > 0, got {half_life_days}")
    return math.log(2) / half_life_days


def temporal_scores(
    timestamps: Sequence[dt.datetime | None],
    windows: Sequence[TimeWindow],
    ref: dt.datetime,
    half_life_days: float = 30.0,
    slack_days: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(score, in_window mask) per unit: exp(-lambda * age_days) inside any window, else 0.

    ``slack_days`` widens every window on both sides: a session dated the 9th often reports what
    happened "yesterday", so an event of the 8th is discussed in a session just outside its day.
    """
    lam = decay_rate(half_life_days)
    slack = dt.timedelta(days=slack_days)
    scores = np.zeros(len(timestamps), dtype=np.float64)
    mask = np.zeros(len(timestamps), dtype=bool)
    for i, ts in enumerate(timestamps):
        if ts is None or not any(w.contains(ts, slack) for w in windows):
            continue
        age = max((ref - ts).total_seconds() / 86400.0, 0.0)
        scores[i], mask[i] = math.exp(-lam * age), True
    return scores, mask


def strip_expressions(text: str, windows: Sequence[TimeWindow]) -> str:
    """``text`` without the time expressions its windows were parsed from.

    Why: "What kitchen appliance did I buy 10 days ago?" asks the content channels about a
    kitchen appliance; "10 days ago" is the temporal channel's business and only adds noise
    words ("days") to BM25 and the embedding. Returns ``text`` unchanged when nothing is left.
    """
    out = text
    for part in (part for w in windows for part in w.expression.split(" in ")):  # "<weekday> in <window>"
        out = re.sub(re.escape(part), " ", out, flags=re.IGNORECASE)
    out = re.sub(r"\s+", " ", out).strip()
    return out if re.search(r"\w", out) else text
