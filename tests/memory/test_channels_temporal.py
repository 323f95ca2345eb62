"""Time-expression parser (table-driven, hand-checked windows) and recency-decay scores."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest

from pipeline.memory.channels.temporal import (
    TimeWindow,
    decay_rate,
    parse_time_windows,
    strip_expressions,
    temporal_scores,
)

REF = dt.datetime(2023, 5, 30, 10, 18)  # a Tuesday (LongMemEval's first question date)
NOW = "2023-05-30 10:18"

WEDNESDAYS = ("2023-03-15", "2023-03-22", "2023-03-29", "2023-04-05", "2023-04-12")  # in ref - 2 months +- 15 d

# question -> [(start, end)] ("YYYY-MM-DD" = whole day; full timestamps where a window ends at ref)
CASES: list[tuple[str, list[tuple[str, str]]]] = [
    ("How many days ago did I attend a networking event?", []),  # "how many ... ago": no window
    ("How many months have passed since I last visited a museum?", []),
    ("What may I cook for dinner?", []),  # "may" the verb is not a month
    ("What did I buy yesterday?", [("2023-05-29", "2023-05-29")]),
    ("What did I eat last night?", [("2023-05-29", "2023-05-29")]),
    ("What did I do the day before yesterday?", [("2023-05-28", "2023-05-28")]),
    ("What am I doing today?", [("2023-05-30", NOW)]),
    ("I mentioned cooking something a couple of days ago.", [("2023-05-28", "2023-05-28")]),
    ("Which book did I finish 3 days ago?", [("2023-05-27", "2023-05-27")]),
    ("Which book did I finish a week ago?", [("2023-05-20", "2023-05-26")]),
    ("I mentioned an investment four weeks ago?", [("2023-04-29", "2023-05-05")]),
    ("I mentioned visiting a museum two months ago.", [("2023-03-15", "2023-04-14")]),
    ("Where did I live two years ago?", [("2020-11-29", "2021-11-28")]),  # 2021-05-30 +- 182 days
    ("What did I buy a few days ago?", [("2023-05-25", "2023-05-28")]),
    ("What did I buy in the past week?", [("2023-05-23", NOW)]),
    ("What did I read in the last week?", [("2023-05-23", NOW)]),
    ("What did I read over the past two weeks?", [("2023-05-16", NOW)]),
    ("Who did I meet in the last 3 months?", [("2023-02-28", NOW)]),
    ("What did I do in the last few days?", [("2023-05-25", NOW)]),
    ("What happened last week?", [("2023-05-22", "2023-05-28")]),
    ("What did I do last weekend?", [("2023-05-27", "2023-05-28")]),
    ("What did I buy last month?", [("2023-04-01", "2023-04-30")]),
    ("Where did I travel last year?", [("2022-01-01", "2022-12-31")]),
    ("What did I do this week?", [("2023-05-29", NOW)]),
    ("What did I do this weekend?", []),  # ref is a Tuesday (see below for a Sunday)
    ("How much did I spend this month?", [("2023-05-01", NOW)]),
    ("What did I plant this year?", [("2023-01-01", NOW)]),
    ("I received a piece of jewelry last Saturday from whom?", [("2023-05-27", "2023-05-27")]),
    ("What did I do on Tuesday?", [("2023-05-23", "2023-05-23")]),  # "on": today excluded
    ("What did I do last Tuesday?", [("2023-05-23", "2023-05-23")]),
    ("What did I do on Sunday?", [("2023-05-28", "2023-05-28")]),
    ("Where was I in May 2023?", [("2023-05-01", NOW)]),
    ("Where was I in March?", [("2023-03-01", "2023-03-31")]),
    ("Where was I in August?", [("2022-08-01", "2022-08-31")]),  # latest August before ref
    ("What happened on May 5th?", [("2023-05-05", "2023-05-05")]),
    ("What happened on June 5?", [("2022-06-05", "2022-06-05")]),
    ("What happened on 5 May 2022?", [("2022-05-05", "2022-05-05")]),
    ("What happened on the 8th of May, 2023?", [("2023-05-08", "2023-05-08")]),
    ("What did I note on 2023/05/01?", [("2023-05-01", "2023-05-01")]),
    ("What did I note on 2023-04-11?", [("2023-04-11", "2023-04-11")]),
    ("What did I note on 04/11/2023?", [("2023-04-11", "2023-04-11")]),
    ("What did I do in 2021?", [("2021-01-01", "2021-12-31")]),
    ("What have I collected since 2021?", [("2021-01-01", NOW)]),
    ("What did I grow last summer?", [("2022-06-01", "2022-08-31")]),
    ("Did it snow this winter?", [("2022-12-01", "2023-02-28")]),
    (
        "What happened yesterday and the day before yesterday?",
        [("2023-05-28", "2023-05-28"), ("2023-05-29", "2023-05-29")],
    ),
    ("What happens next week?", []),  # the future: nothing remembered there
    ("Any documentary recommendations for tonight?", []),  # the coming evening
    ("What should I serve this weekend?", []),  # on a Tuesday: the coming weekend
    ("How much earlier do I wake up on Fridays?", []),  # plural weekday: a habit
    ("My bike is better during my Sunday group ride", []),  # bare weekday as a modifier
    ("What did I do with Rachel on the Wednesday two months ago?", [(d, d) for d in WEDNESDAYS]),
    ("How many rollercoasters did I ride from July to October?", [("2022-07-01", "2022-10-31")]),
    ("Which trips did I take between November and February?", [("2022-11-01", "2023-02-28")]),
]


def _bounds(start: str, end: str) -> tuple[dt.datetime, dt.datetime]:
    s = dt.datetime.fromisoformat(start)
    e = dt.datetime.fromisoformat(end)
    if len(end) == 10:
        e = e + dt.timedelta(days=1) - dt.timedelta(microseconds=1)
    return s, e


@pytest.mark.parametrize(("question", "expected"), CASES, ids=[c[0][:48] for c in CASES])
def test_parse_time_windows(question: str, expected: list[tuple[str, str]]) -> None:
    got = [(w.start, w.end) for w in parse_time_windows(question, REF)]
    assert got == [_bounds(s, e) for s, e in expected]


def test_this_weekend_on_a_sunday_is_the_current_weekend() -> None:
    sunday = dt.datetime(2023, 5, 28, 20, 0)
    [w] = parse_time_windows("What did I do this weekend?", sunday)
    assert (w.start, w.end) == (dt.datetime(2023, 5, 27), sunday)


def test_windows_never_pass_the_reference_date() -> None:
    for question, _ in CASES:
        assert all(w.end <= REF for w in parse_time_windows(question, REF))


def test_decay_rate_halves_every_half_life() -> None:
    assert decay_rate(30) == pytest.approx(math.log(2) / 30)
    with pytest.raises(ValueError):
        decay_rate(0)


def test_temporal_scores_inside_window_decay_outside_zero() -> None:
    window = TimeWindow(dt.datetime(2023, 5, 20), dt.datetime(2023, 5, 26, 23, 59), "a week ago")
    ref = dt.datetime(2023, 5, 30)
    stamps = [dt.datetime(2023, 5, 25), dt.datetime(2023, 5, 20), dt.datetime(2023, 5, 10), None,
              dt.datetime(2023, 5, 27, 12)]  # fmt: skip
    scores, mask = temporal_scores(stamps, [window], ref, half_life_days=10, slack_days=0)
    assert mask.tolist() == [True, True, False, False, False]
    np.testing.assert_allclose(scores, [0.5 ** (5 / 10), 0.5 ** (10 / 10), 0, 0, 0])
    # one day of slack admits the session of the 27th (it may report "yesterday")
    _, mask = temporal_scores(stamps, [window], ref, half_life_days=10, slack_days=1)
    assert mask.tolist() == [True, True, False, False, True]


STRIP_CASES = [
    ("What kitchen appliance did I buy 10 days ago?", "What kitchen appliance did I buy ?"),
    ("Who did I meet last Tuesday for lunch?", "Who did I meet for lunch?"),
    ("What did I cook yesterday", "What did I cook"),
    ("yesterday", "yesterday"),  # nothing but the expression: keep the text
    ("What is my cat called?", "What is my cat called?"),  # no expression: unchanged
]


@pytest.mark.parametrize(("question", "expected"), STRIP_CASES, ids=[c[0][:40] for c in STRIP_CASES])
def test_strip_expressions(question: str, expected: str) -> None:
    ref = dt.datetime(2023, 5, 30, 12, 0)
    assert strip_expressions(question, parse_time_windows(question, ref)) == expected
