"""Where a benchmark project lives: the folder a config's relative paths, its results and its Dagster home resolve in.

Why: membench runs from its own clone (the clone is the project) and, installed with pip, from a
project folder of the researcher's own (``membench init DIR``). Both are folders holding a
``workspace.yaml`` (the Dagster entry), so that file marks a project:

- a config's relative paths (``results_dir``, ``datasets[].path``, ``prices_path``) resolve against
  the project above the config file; a config outside any project resolves them against the clone
  membench runs from (what every config did before projects existed), or, installed, against the
  config's own folder;
- without ``$MEMBENCH_CONFIG`` the default config is ``configs/sample.yaml`` of the project the
  working directory is in (the clone's own when there is none);
- ``membench:<path>`` names a file membench ships, relative to its install root (the clone, or
  site-packages, which hold the same ``pipeline/``, ``configs/`` layout): the bundled samples
  (``membench:pipeline/sample_data/locomo_sample.json``) resolve in a project outside the clone too.
"""

from __future__ import annotations

import os
from pathlib import Path

INSTALL_ROOT = Path(__file__).resolve().parents[2]  # the clone, or the site-packages folder membench is installed in
PROJECT_MARKER = "workspace.yaml"
DEFAULT_CONFIG_NAME = Path("configs") / "sample.yaml"
BUNDLED_PREFIX = "membench:"
ENV_FILE = ".env"  # read by Dagster from the working directory; membench's CLI reads the same file


def in_clone() -> bool:
    """True when membench runs from a source checkout (its pyproject.toml beside the packages)."""
    return (INSTALL_ROOT / "pyproject.toml").is_file()


def project_of(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding a ``workspace.yaml``, else None."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_MARKER).is_file():
            return folder
    return None


def config_base(config_file: Path) -> Path:
    """The folder a config's relative paths resolve against (see the module docstring)."""
    found = project_of(config_file.parent)
    if found is not None:
        return found
    return INSTALL_ROOT if in_clone() else config_file.resolve().parent


def default_config() -> Path | None:
    """``configs/sample.yaml`` of the project the working directory is in, else the clone's own; None
    for an installed membench outside any project (its results would land in site-packages)."""
    found = project_of(Path.cwd())
    if found is not None and (found / DEFAULT_CONFIG_NAME).is_file():
        return found / DEFAULT_CONFIG_NAME
    return INSTALL_ROOT / DEFAULT_CONFIG_NAME if in_clone() else None


def bundled(relative: str) -> Path:
    """A file membench ships, by its path in the repository (``configs/dagster.yaml``)."""
    return INSTALL_ROOT / relative


def resolve_path(raw: str, base: Path) -> Path:
    """A path written in a config: ``$VARS`` expanded, ``membench:`` bundled, relative ones against ``base``."""
    text = os.path.expandvars(raw)
    if text.startswith(BUNDLED_PREFIX):
        return bundled(text.removeprefix(BUNDLED_PREFIX)).resolve()
    p = Path(text)
    return p if p.is_absolute() else (base / p).resolve()
