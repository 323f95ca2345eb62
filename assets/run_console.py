"""What the terminal shows when a run ends with failed questions: no stack trace, and last the
summary and what to do next.

Why: a run with failed questions fails on purpose (each stage's ``no_failed_units`` check step,
assets/question_assets.py), so Dagster shows them as Failed and ``dagster job execute`` exits 1.
Dagster's console logger prints every step failure with its stack trace, and then the run failure
with the same trace again: ~40 lines of Dagster frames for a failure that is no bug. Under
``dagster job execute`` (and ``dagster asset materialize``, ``dg launch``):

- the console lines of that deliberate failure, and of a dataset that failed to load (a bad input
  file), keep their message and lose the trace (the run's event log, which the UI shows, keeps
  everything; any other error keeps its trace);
- the run's summary line, one line per failed dataset and per stage that failed questions of its
  own (the reason), and the command that lists the failed questions are printed at process exit,
  after Dagster's ``Error: Run ... resulted in failure.``, so they are the last lines read.
"""

from __future__ import annotations

import atexit
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import dagster as dg

from pipeline.config.entry_errors import in_dagster_run_command
from pipeline.config.model import config_path_from_env
from pipeline.config.printed_commands import config_selection

MARK = "questions of this run failed"
DATASETS_MARK = "The run fails because a dataset failed to load"
HELD_MARK = "is held by run"  # a run refused because another live run holds its questions (assets/run_claim.py)
MARKS = (MARK, DATASETS_MARK, HELD_MARK)  # the deliberate failures, whose console lines lose their stack trace
TRACE = "\n\nStack Trace:\n"
RESET = "\x1b[0m"


def questions_failed(stage: str, n_keys: int, failed: list[tuple[str, str]]) -> dg.Failure:
    """The failure of a stage's check step: how many questions failed, one example, what happens next."""
    key, error = failed[0]
    _quiet_console()
    return dg.Failure(
        f"{stage}: {len(failed)} of {n_keys} {MARK} (recorded with their errors, not scored; retried by the next "
        f"run; `membench failed` lists them). First: {key}: {error[:300]}",
        metadata={"failed_questions": len(failed)},
    )


def datasets_failed(summary: str, details: Sequence[str], metadata: dict[str, int]) -> dg.Failure:
    """The failure of the run's last step when a dataset of the run failed to load: a bad input file,
    no bug, so its console lines carry no stack trace either."""
    _quiet_console()
    return dg.Failure(
        f"{summary}. {DATASETS_MARK} (not this step; its report was written): {'; '.join(details)}. "
        "The failed questions are recorded with their errors (`membench failed`) and are retried by the next run.",
        metadata=metadata,
    )


def refused(message: str) -> dg.Failure:
    """The failure of a run's first step refused by a colliding run: a fact to act on, no bug, so its
    console lines carry no stack trace (it printed 22 frames of Dagster's)."""
    _quiet_console()
    return dg.Failure(message)


class _NoTraceForFailedQuestions:
    """sys.stderr, except that a console line of the failed-questions failure loses its stack trace.

    Dagster's console handler looks sys.stderr up for every record, and writes a record at once.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if TRACE in text and any(mark in text for mark in MARKS):
            head, _, tail = text.partition(TRACE)
            text = head.rstrip("\n") + (RESET if RESET in tail else "") + "\n"  # a coloured line stays closed
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _quiet_console() -> None:
    if in_dagster_run_command() and not isinstance(sys.stderr, _NoTraceForFailedQuestions):
        sys.stderr = _NoTraceForFailedQuestions(sys.stderr)


def say_at_exit(summary: str, report: str | None, details: Sequence[str] = ()) -> None:
    """Under ``dagster job execute`` (and its siblings): print the summary, why (``details``: one line
    per failed dataset and per stage with failures of its own) and what to do next when the process
    exits, after Dagster's ``Error: Run ... resulted in failure.``."""
    if not in_dagster_run_command():
        return
    select = config_selection(config_path_from_env())
    lines = ["", summary, *details]
    if report:
        lines.append(f"Report (failed questions reported apart): {report}")
    lines.append(
        "The failed questions are recorded with their errors and are retried by the next run; "
        f"list them and the commands that re-run them: {select}membench failed"
    )
    atexit.register(lambda: sys.stderr.write("\n".join(lines) + "\n"))
