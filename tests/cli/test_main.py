"""The ``membench`` CLI: results, one clear line and exit 2 for every user error, parameterized SQL.

Table-driven through ``main(argv)`` (fast), plus one run of the installed entry point to prove a
user error never shows a traceback.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli.main import format_table
from tests.support.cli import configs, results_config, run

__all__ = ["configs"]  # fixtures


# argv (placeholders: RUN, EMPTY, MISSING, RESULTS) -> expected exit status, text expected on stderr
USER_ERRORS: list[tuple[list[str], str]] = [
    (["--config", "MISSING", "progress"], "config file not found"),
    (["--config", "MISSING", "sql", "SELECT 1"], "config file not found"),
    (["--config", "MISSING", "results"], "config file not found"),
    (["--config", "EMPTY", "progress"], "no results yet"),
    (["--config", "EMPTY", "failed"], "no results yet"),
    (["--config", "EMPTY", "results"], "no results yet"),
    (["--config", "EMPTY", "sql", "SELECT * FROM progress"], "no results yet"),
    (["--config", "RUN", "failed", "--stage", "x'"], "invalid choice"),
    (["--config", "RUN", "failed", "--stage", "answer"], "invalid choice: 'answer'"),
    (["--config", "RUN", "sql", "SELECT no_such_column FROM questions"], "no_such_column"),
    (["--config", "RUN", "sql", "SELECT * FROM questions WHERE"], "Parser Error"),
    (["--config", "RUN", "compare", "RESULTS", "/nonexistent/run"], "no such results folder"),
    (["--config", "RUN", "compare", "RESULTS", "MISSING"], "config file not found"),
    (["--config", "RUN", "compare", "RESULTS", "EMPTY"], "holds no results yet"),
    (["--config", "RUN", "nonsense"], "invalid choice"),
    (["--config", "RUN"], "required"),
]


@pytest.mark.parametrize(("argv", "message"), USER_ERRORS)
def test_user_error_is_one_line_and_exit_2(
    argv: list[str], message: str, configs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _out, err = run([configs.get(a, a) for a in argv], capsys)
    assert rc == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("membench") and "Traceback" not in err


# argv -> lines expected on stdout (exit 0, but 1 for `failed` listing failed questions)
OK_COMMANDS: list[tuple[list[str], list[str]]] = [
    (["sql", "SELECT question_id, partition_key FROM questions ORDER BY 1"], ["question_id | partition_key", "d__q2"]),
    (["sql", "SELECT * FROM questions WHERE false"], ["(0 rows)"]),
    (["sql", "SELECT 'x''y' AS quoted"], ["x'y"]),
    (["progress"], ["answers", "canonical"]),
    (["failed"], ["answers\td__q2\treader timed out", "1 failed question(s)"]),
    (
        ["failed", "--stage", "answers"],
        ["answers\td__q2", "--select 'run/ingestion,run/retrievals,", "--partition d__q2"],
    ),
    (["failed", "--stage", "judgments"], ["no failed questions at stage judgments"]),
]


@pytest.mark.parametrize(("argv", "expected"), OK_COMMANDS)
def test_commands(
    argv: list[str], expected: list[str], configs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run(["--config", configs["RUN"], *argv], capsys)
    listed_failures = argv[0] == "failed" and "no failed questions" not in out
    assert (rc, err) == (1 if listed_failures else 0, "")
    for text in expected:
        assert text in out


def test_failed_stage_filter_is_a_parameter(configs: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """The stage reaches DuckDB as a bound value: an injection attempt would need to get past
    argparse's choices first, and the SQL holds a placeholder, not the text."""
    from pipeline.cli import main as cli

    assert "$stage" in cli.FAILED_SQL and "{" not in cli.FAILED_SQL
    rc, out, _ = run(["--config", configs["RUN"], "failed", "--stage", "canonical"], capsys)
    assert rc == 0 and "no failed questions at stage canonical" in out


def test_failed_rows_keep_their_keys(configs: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """A failed answer row written without system/reader gets them from its unit in the view."""
    rc, out, _ = run(["--config", configs["RUN"], "sql", "SELECT system, reader FROM answers WHERE status = 'failed'"],
                     capsys)  # fmt: skip
    assert rc == 0 and "rag    | offline" in out


def test_sql_on_a_copied_results_folder(
    configs: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Views hold relative paths: a copy answers from its own files even after the original is gone."""
    copy = tmp_path / "copy"
    shutil.copytree(configs["RESULTS"], copy)
    shutil.rmtree(configs["RESULTS"])
    cfg = results_config(tmp_path, "copy", copy)
    rc, out, err = run(["--config", cfg, "sql", "SELECT count(*) AS n FROM answers"], capsys)
    assert (rc, err) == (0, "") and out.splitlines()[2].strip() == "2"


def test_format_table_zero_rows() -> None:
    assert format_table(["a", "bb"], []).splitlines() == ["a | bb", "--+---", "(0 rows)"]


def test_entry_point_prints_no_traceback(configs: dict[str, str]) -> None:
    exe = Path(sys.executable).with_name("membench")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "pipeline.cli.main"]
    proc = subprocess.run(
        [*cmd, "--config", configs["RUN"], "failed", "--stage", "answer"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and "invalid choice" in proc.stderr


def test_help_is_for_users() -> None:
    """`membench --help` and each command's help, as printed: no reST double backticks, no developer notes."""
    exe = Path(sys.executable).with_name("membench")
    commands = ["", "results", "check-config", "progress", "failed", "forget", "sql", "schema", "compare",
                "leaderboard"]  # fmt: skip
    for command in commands:
        proc = subprocess.run([str(exe), *command.split(), "--help"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "``" not in proc.stdout and "Why" not in proc.stdout, (command, proc.stdout)
    top = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=120).stdout
    assert "dagster job execute -j full_benchmark" in top
