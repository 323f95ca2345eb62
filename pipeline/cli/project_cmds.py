"""``membench init`` and ``membench install-hindsight``, and the project's ``.env`` every command reads.

Why here and not in main.py: these commands set a project up (files, a virtualenv), where the
others read results; main.py only registers them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from pipeline.cli.errors import UserError
from pipeline.cli.init import active_venv_activate, init_project, report
from pipeline.config.project import ENV_FILE, bundled

INSTALL_TIMEOUT_S = 3600  # a cold install of the Hindsight server downloads ~1.5 GB


def load_project_env(cwd: Path | None = None) -> list[str]:
    """Apply the working directory's ``.env`` to this process as Dagster does (its values win), so that
    membench sees the project's ``DAGSTER_HOME`` and API keys as the dagster commands run there do."""
    path = (cwd or Path.cwd()) / ENV_FILE
    if not path.is_file():
        return []
    values = {k: v for k, v in dotenv_values(path).items() if v is not None}
    os.environ.update(values)
    return sorted(values)


def add_project_parsers(sub: Any) -> None:
    """The two sub-commands' arguments (``sub``: main's sub-parser action)."""
    p_init = sub.add_parser(
        "init",
        help="write a benchmark project folder (sample config, Dagster workspace and home, README) to run in",
        description="Write a ready benchmark project in DIR (created when absent; files already there are kept). "
        "In DIR, `dagster job execute -j full_benchmark` runs the bundled sample and `dagster dev` opens the UI.",
    )
    p_init.add_argument("dir", metavar="DIR", help="the project folder")
    p_init.add_argument(
        "--no-venv-hook",
        action="store_true",
        help="do not add the dagster settings to the active virtualenv's bin/activate (print them instead)",
    )
    p_hs = sub.add_parser(
        "install-hindsight",
        help="make the Hindsight server's own virtualenv from the locked file membench ships (memory kind hindsight)",
    )
    p_hs.add_argument("--venv", help="where (default: the one memory kind hindsight uses)")


def cmd_init(args: argparse.Namespace) -> int:
    target = Path(args.dir)
    if target.exists() and not target.is_dir():
        raise UserError(f"{target} exists and is not a folder")
    result = init_project(target, None if args.no_venv_hook else active_venv_activate())
    sys.stdout.write("\n".join(report(result)) + "\n")
    return 0


def cmd_install_hindsight(args: argparse.Namespace) -> int:
    """``python -m venv`` + ``pip install --require-hashes`` of configs/lock/hindsight-server.txt."""
    from pipeline.products.hindsight_server import DEFAULT_VENV, SERVER_LOCK, venv_problem

    venv = Path(args.venv).expanduser().resolve() if args.venv else DEFAULT_VENV
    lock = bundled(SERVER_LOCK)
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--require-hashes", "-r", str(lock)],
    ]
    for step in steps if not (venv / "bin" / "python").exists() else steps[1:]:
        done = subprocess.run(step, timeout=INSTALL_TIMEOUT_S)
        if done.returncode != 0:
            raise UserError(f"`{' '.join(step)}` failed (exit status {done.returncode})")
    problem = venv_problem(venv)
    if problem:
        raise UserError(problem)
    sys.stdout.write(f"Hindsight server installed in {venv}\n")
    return 0
