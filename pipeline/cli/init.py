"""``membench init DIR``: a benchmark project of the researcher's own, outside membench's clone.

Why: installed with pip, membench has no clone to run in; a project folder holds what the clone
holds for its own runs, so that in DIR ``dagster dev`` and ``dagster job execute -j full_benchmark``
work as typed and ``membench`` finds the results:

- ``workspace.yaml``: the Dagster entry (``pipeline.definitions``) and the mark of a project
  (pipeline/config/project.py: a config's relative paths resolve against this folder);
- ``configs/sample.yaml`` (its datasets are the bundled samples, ``membench:pipeline/sample_data/...``)
  and ``configs/prices.yaml``, copied from what membench ships;
- ``.dagster_home/dagster.yaml``, a project-local Dagster home (Dagster forgets which questions are
  done without one), and ``.env``, which Dagster reads from the working directory: it points
  ``DAGSTER_HOME`` there and keeps the embedding model offline;
- a short ``README.md`` and a ``.gitignore`` for what runs write.

A file already there is kept (a second ``init`` never overwrites a config you edited), except the
``DAGSTER_HOME`` line of ``.env``, which follows the folder when it moved. ``dagster job execute``
finds ``pipeline.definitions`` through ``DAGSTER_CLI_*_MODULE_NAME`` (Dagster reads its options
before the ``.env``): they are added to the virtualenv's ``bin/activate`` once, as the clone's
set-up does for its own ``.venv``.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.config.project import DEFAULT_CONFIG_NAME, ENV_FILE, PROJECT_MARKER, bundled

DAGSTER_HOME_DIR = ".dagster_home"
COPIED = {  # project file -> the file membench ships
    str(DEFAULT_CONFIG_NAME): "configs/sample.yaml",
    "configs/prices.yaml": "configs/prices.yaml",
    f"{DAGSTER_HOME_DIR}/dagster.yaml": "configs/dagster.yaml",
}
WORKSPACE = """# The Dagster entry of this membench project (`dagster dev` reads it). Its presence marks the project:
# relative paths in configs/*.yaml resolve against this folder.
load_from:
  - python_module:
      module_name: pipeline.definitions
      working_directory: .
"""
GITIGNORE = """results/
.dagster_home/*
!.dagster_home/dagster.yaml
.tmp_dagster_home_*/
.env
"""
README = """# A membench project

Made by `membench init`. In this folder, with the virtualenv membench is installed in activated:

```bash
dagster job execute -j full_benchmark   # every question not yet done (resumable)
membench results                        # where the results are, and a first SQL query
dagster dev                             # the UI at http://127.0.0.1:3000
```

- `configs/sample.yaml`: the default config (the bundled sample data, the offline reader). Write your
  own beside it and select it with `MEMBENCH_CONFIG=configs/<name>.yaml dagster job execute -j full_benchmark`;
  relative paths in a config resolve against this folder, `membench:...` names a file membench ships.
- `configs/prices.yaml`: LLM prices per 1M tokens (cost columns); edit them here.
- `results/<config>/`: everything a run produced (`report.html`, Parquet files, `results.duckdb`).
- `.dagster_home/`: Dagster's instance (which questions are done); `.env` points Dagster at it. If you
  move this folder, run `membench init` on it again.

Memory products are extras: `pip install 'membench[mem0]'` (or `[langmem]`, `[graphiti]`, `[mcp]`,
`[all]`); Hindsight's server: `membench install-hindsight`. `membench check-config FILE` says what a
config still needs.
"""
VENV_MARK = "# >>> membench init >>>"  # not the clone's set-up block (scripts/setup.sh), which also sets DAGSTER_HOME
VENV_END = "# <<< membench init <<<"
SUPERSEDED = ",".join(
    f"ignore:Function `{c}` is superseded" for c in ("job_execute_command", "asset_materialize_command", "dev_command")
)
MODULE_OPTIONS = ("JOB_EXECUTE", "JOB_BACKFILL", "JOB_LAUNCH", "ASSET_MATERIALIZE", "ASSET_LIST")


@dataclass
class InitResult:
    """What ``init`` did: files written and kept, and the virtualenv hook's state."""

    root: Path
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    activate: Path | None = None  # the activate script holding the hook (None: not in a virtualenv)
    hook_added: bool = False


def env_lines(root: Path) -> dict[str, str]:
    """The ``.env`` settings of a project at ``root`` (Dagster reads the file from the working directory)."""
    return {"DAGSTER_HOME": str(root / DAGSTER_HOME_DIR), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def venv_hook() -> str:
    """The block added to a virtualenv's ``bin/activate``: where ``dagster job execute`` finds the
    definitions, and Dagster's notice that ``dg`` supersedes the commands membench prints kept quiet."""
    lines = [VENV_MARK]
    lines += [f'export DAGSTER_CLI_{o}_MODULE_NAME="pipeline.definitions"' for o in MODULE_OPTIONS]
    lines.append(f"export PYTHONWARNINGS='{SUPERSEDED}'" + '"${PYTHONWARNINGS:+,$PYTHONWARNINGS}"')
    lines.append(VENV_END)
    return "\n".join(lines) + "\n"


def _write_env(root: Path, result: InitResult) -> None:
    """Write ``.env``, or bring its settings up to date in an existing one (its other lines are kept)."""
    path = root / ENV_FILE
    wanted = env_lines(root)
    old = path.read_text().splitlines() if path.exists() else []
    keys = {line.split("=", 1)[0].strip() for line in old if "=" in line and not line.lstrip().startswith("#")}
    new = [f"{k}={wanted[k]}" if "=" in line and (k := line.split("=", 1)[0].strip()) in wanted else line
           for line in old]  # fmt: skip
    if not old:
        new.append("# read by Dagster (and membench) when run in this folder; written by `membench init`")
    new += [f"{k}={v}" for k, v in wanted.items() if k not in keys]
    if new != old:
        path.write_text("\n".join(new) + "\n")
        result.written.append(ENV_FILE)
    else:
        result.kept.append(ENV_FILE)


def _write(root: Path, name: str, text: str | None, source: Path | None, result: InitResult) -> None:
    path = root / name
    if path.exists():
        result.kept.append(name)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if source is not None:
        shutil.copyfile(source, path)
    else:
        path.write_text(text or "")
    result.written.append(name)


def active_venv_activate() -> Path | None:
    """``bin/activate`` of the virtualenv this membench runs in, or None outside one."""
    if sys.prefix == sys.base_prefix:
        return None
    path = Path(sys.prefix) / "bin" / "activate"
    return path if path.is_file() else None


def add_venv_hook(activate: Path) -> bool:
    """Append the hook to ``activate`` unless its settings are there (the clone's set-up writes them too,
    in its own block); a hook an older membench wrote is replaced."""
    text = activate.read_text()
    hook = venv_hook()
    if hook in text or all(line in text for line in hook.splitlines() if "MODULE_NAME" in line):
        return False
    if VENV_MARK in text and VENV_END in text:
        head, _, rest = text.partition(VENV_MARK)
        text = head + rest.partition(VENV_END)[2].lstrip("\n")
    activate.write_text(text.rstrip("\n") + "\n" + hook)
    return True


def init_project(root: Path, activate: Path | None = None) -> InitResult:
    """Write the project at ``root`` (created when absent) and the virtualenv hook into ``activate``."""
    root = root.expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    result = InitResult(root)
    for name, shipped in COPIED.items():
        _write(root, name, None, bundled(shipped), result)
    _write(root, PROJECT_MARKER, WORKSPACE, None, result)
    _write(root, "README.md", README, None, result)
    _write(root, ".gitignore", GITIGNORE, None, result)
    _write_env(root, result)
    if activate is not None:
        result.activate = activate
        result.hook_added = add_venv_hook(activate)
    return result


def report(result: InitResult) -> list[str]:
    """What ``membench init`` prints: what it wrote and kept, and the commands to type next."""
    lines = [f"membench project in {result.root}"]
    lines += [f"  written: {n}" for n in result.written] + [f"  kept (already there): {n}" for n in result.kept]
    if result.activate is None:
        exports = venv_hook().splitlines()[1:-1]
        lines += ["`dagster job execute` finds membench's definitions through these settings: add them to your "
                  "virtualenv's bin/activate or your shell's start-up file:", *(f"  {e}" for e in exports)]  # fmt: skip
        activate_hint = ""
    else:
        added = "added to" if result.hook_added else "already in"
        lines.append(f"dagster's settings for membench {added} {result.activate}")
        activate_hint = f"source {result.activate} && "
    run = "dagster job execute -j full_benchmark && membench results"
    lines += ["next:", f"  {activate_hint}cd {result.root} && {run}"]
    return lines
