"""Config mistakes at the Dagster entry point: one line naming file, entry and key, not a traceback.

Why: ``dagster job execute`` imports pipeline.definitions, which loads the config; a ConfigError
there would reach the user as ~80 lines of Dagster's loader traceback around the one line
``membench check-config`` prints for the same mistake.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pipeline.config.model import ConfigError

T = TypeVar("T")


# the dagster CLI commands that load the definitions in this process and then run (not a code
# server, whose load error the UI shows): there, a config mistake ends the command in one line
_RUN_COMMANDS = frozenset({"job", "asset", "launch"})


def in_dagster_run_command() -> bool:
    """True in a ``dagster job execute`` / ``dagster asset materialize`` / ``dg launch`` process."""
    argv = sys.argv
    return len(argv) > 1 and Path(argv[0]).name in {"dagster", "dg"} and argv[1] in _RUN_COMMANDS


def in_whole_config_job_execute() -> bool:
    """True in ``dagster job execute`` without ``--tags``: every membench job then covers every question
    of the config (a range comes only with ``--tags``)."""
    return in_dagster_run_command() and sys.argv[1:3] == ["job", "execute"] and "--tags" not in sys.argv


def exit_on_config_error(build: Callable[[], T]) -> T:
    """``build()``; under ``dagster job execute`` (and its siblings) a ConfigError ends the command
    with one stderr line naming file, entry and key and exit status 2, instead of ~80 lines of
    traceback through Dagster's loader. Elsewhere (code servers, tests) the error propagates."""
    try:
        return build()
    except ConfigError as exc:
        if not in_dagster_run_command():
            raise
        sys.stderr.write(f"membench: config error: {' '.join(str(exc).split())}\n")
        raise SystemExit(2) from None
