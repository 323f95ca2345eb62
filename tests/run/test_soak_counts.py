"""The soak's counters (benchmarks/soak_counts.py) on hand-made request logs and progress rows.

Why: the soak's figures must read 0, and a 0 proves something only if the same counter says 1
when a reply is requested twice, a row is lost, or a line names a stage. No process, no clock.
"""

from __future__ import annotations

import sys

import pytest

from tests.support.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))

import soak_counts as sc


def req(id: int, key: str, begin: float, end: float | None, delivered: bool = True) -> sc.Request:
    return sc.Request(id, key, begin, end, delivered)


def test_a_reply_asked_again_after_delivery_counts_once_per_request() -> None:
    log = [req(0, "a", 0, 1), req(1, "a", 2, 3), req(2, "a", 4, 5), req(3, "b", 0, 1)]
    assert sc.requested_twice(log, excused=set()) == 2


def test_retries_of_undelivered_requests_are_not_twice() -> None:
    # a 429, a 500 and a hang (never delivered), then the 200: one reply, paid once
    log = [req(0, "a", 0, 1, False), req(1, "a", 1, 2, False), req(2, "a", 2, 4, False), req(3, "a", 4, 5)]
    assert sc.requested_twice(log, excused=set()) == 0


def test_a_reply_in_flight_at_a_kill_is_excused_but_only_that_one() -> None:
    log = [req(0, "a", 0, 1), req(1, "a", 2, 3), req(2, "a", 4, 5)]
    # request 0 was in flight at a kill: request 1 may ask again, request 2 asks after 1's delivery
    assert sc.requested_twice(log, excused={0}) == 1
    assert sc.requested_twice(log, excused={0, 1}) == 0


def test_concurrent_requests_for_one_prompt_are_not_twice_until_one_is_delivered() -> None:
    log = [req(0, "a", 0, 2), req(1, "a", 1, 3)]  # the second began before the first was answered
    assert sc.requested_twice(log, excused=set()) == 0


def test_in_flight_at_the_kill() -> None:
    # the log is read once the killed process is gone: request 3 arrived after the kill signal was
    # sent but before the process died, so its reply may be lost too (it is in flight at the kill)
    log = [req(0, "a", 0, 1), req(1, "b", 1, 5), req(2, "c", 2, None), req(3, "d", 4, 6)]
    assert sc.in_flight_at(log, kill=3) == {1, 2, 3}


def test_delivered_uncached_within_the_window_only() -> None:
    log = [req(0, "a", 0, 1), req(1, "b", 8, 9), req(2, "c", 8, 9.5), req(3, "d", 9, 9.8, False)]
    # a delivered at 1 (outside a 5 s window before the kill at 10); c is cached; d was never delivered
    assert sc.delivered_uncached(log, kill=10, cached={"c"}, window_s=5) == {1}


@pytest.mark.parametrize(
    ("rows", "lost", "scored"),
    [
        ([{"partition_key": "g__1", "status": "done"}, {"partition_key": "b__2", "status": "failed"}], 0, 0),
        ([{"partition_key": "g__1", "status": "missing"}], 1, 0),
        ([{"partition_key": "g__1", "status": "failed"}, {"partition_key": "b__2", "status": "missing"}], 2, 0),
        ([{"partition_key": "b__2", "status": "done"}], 0, 1),
    ],
)
def test_rows_lost_and_the_bad_record_scored(rows: list[dict[str, object]], lost: int, scored: int) -> None:
    assert sc.rows_lost(rows, expected_failed={"b__2"}) == lost
    assert sc.unexpected_ok(rows, expected_failed={"b__2"}) == scored


def test_step_lines_and_to_compute() -> None:
    line = (
        "2026-11-25 17:21:13 +0000 - dagster - INFO - full_benchmark - 3ff8 - soak__answers - "
        "answers: 16 questions, 0 already done, 15 to compute, 1 without a valid canonical record"
    )
    step, message = sc.step_of_line(line, "soak") or ("", "")
    assert step == "answers"
    assert sc.to_compute(message) == 15
    failure = "2026 - dagster - ERROR - full_benchmark - 3ff8 - 20296 - soak__benchmark_report - STEP_FAILURE - x"
    assert sc.step_of_line(failure, "soak") == ("benchmark_report", "STEP_FAILURE - x")
    assert sc.step_of_line("Loading weights: 100%", "soak") is None
    assert sc.step_of_line("... - other__answers - answers: 1 to compute", "soak") is None
    assert sc.to_compute("memory: RSS 772 MB at step end") is None


def test_table_lists_every_stage_and_figure() -> None:
    text = sc.table([("answers", 3), ("report", 0)], {"rows lost": 0, "LLM replies requested twice": 1})
    assert "  answers" in text and "  report" in text
    assert text.splitlines()[-1].split() == ["LLM", "replies", "requested", "twice", "1"]


@pytest.mark.parametrize(
    ("step", "target", "over"),
    [
        ("retrieval_report", "answers", False),  # runs between answers and judgments
        ("retrieval_report", "judgments", False),
        ("retrieval_report", "retrieval", True),
        ("judgments", "answers", True),
        ("answers", "answers", False),
        ("benchmark_report", "judgments", True),
        ("canonical", "start", True),
    ],
)
def test_which_step_means_the_target_stage_is_over(step: str, target: str, over: bool) -> None:
    assert sc.passed(step, target) is over


def test_broken_files_are_those_with_other_than_one_schema_revision() -> None:
    revisions = {"history/runs.db": ["29b5", "5771"], "history/runs/index.db": ["29b5"], "x.db": None, "e.db": []}
    assert sc.broken_files(revisions) == ["e.db", "history/runs.db"]
    assert sc.broken_files({"history/runs.db": ["29b5"]}) == []
