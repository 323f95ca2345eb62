"""The lock files (configs/lock/*.txt) and the pyproject declaration they were generated from.

Why a digest: pip-tools writes no record of its input, so a lock regenerated from an older
pyproject.toml looks as valid as a current one. scripts/lock.sh writes the sha256 of pyproject's
dependency declaration at the top of every lock file (this module computes it, for the script and
for tests/tree/test_lock.py); any edit of a dependency, an extra or requires-python changes it.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
LOCK_DIR = ROOT / "configs" / "lock"
DIGEST_LINE = re.compile(r"^# pyproject-dependencies-sha256: (?P<digest>[0-9a-f]{64})$", re.M)
PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)(?:\[[^\]]*\])?==(?P<version>\S+?)(?: \\)?$", re.M)


def declaration(pyproject: Path = PYPROJECT) -> dict[str, object]:
    """What the locks are resolved from: requires-python, the dependencies and every extra."""
    project = tomllib.loads(pyproject.read_text())["project"]
    return {
        "requires-python": project.get("requires-python"),
        "dependencies": project.get("dependencies", []),
        "optional-dependencies": project.get("optional-dependencies", {}),
    }


def pyproject_digest(pyproject: Path = PYPROJECT) -> str:
    """sha256 of the declaration as canonical JSON (comments and formatting do not count)."""
    return hashlib.sha256(json.dumps(declaration(pyproject), sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class LockFile:
    """One lock file: its recorded digest, its pins (normalized name -> version) and unhashed pins."""

    path: Path
    digest: str | None
    pins: dict[str, str]
    unhashed: list[str]


def normalize(name: str) -> str:
    """PEP 503 name normalization (``PyStemmer`` and ``pystemmer``, ``sqlean.py`` and ``sqlean-py``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path) -> LockFile:
    """The digest line, the pins and which pins lack a ``--hash`` line (pip-compile's layout)."""
    text = path.read_text()
    found = DIGEST_LINE.search(text)
    pins: dict[str, str] = {}
    unhashed = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = PIN.match(line)
        if not m:
            continue
        pins[normalize(m.group("name"))] = m.group("version")
        if i + 1 >= len(lines) or "--hash=sha256:" not in lines[i + 1]:
            unhashed.append(m.group("name"))
    return LockFile(path, found.group("digest") if found else None, pins, unhashed)


def requirements(extras: tuple[str, ...], pyproject: Path = PYPROJECT) -> list[Requirement]:
    """The core's dependencies and those of each extra named (membench's own self-reference left out).

    ``packaging`` is imported inside: scripts/lock.sh imports this module for the digest with whichever
    Python resolves the locks, which may have nothing but the standard library."""
    from packaging.requirements import Requirement

    project = tomllib.loads(pyproject.read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return [r for r in reqs if normalize(r.name) != "membench"]


def disagreements(lock: LockFile, extras: tuple[str, ...], pyproject: Path = PYPROJECT) -> list[str]:
    """Why ``lock`` does not lock ``pyproject`` with these extras ([] when it does): another declaration
    (its digest), a requirement unpinned or pinned outside its range, a pin without a hash."""
    found = []
    if lock.digest != pyproject_digest(pyproject):
        found.append(f"{lock.path.name} was generated from another pyproject.toml: run `bash scripts/lock.sh`")
    for r in requirements(extras, pyproject):
        pinned = lock.pins.get(normalize(r.name))
        if pinned is None or not r.specifier.contains(pinned, True):
            found.append(f"{lock.path.name}: {r} (locked: {pinned})")
    found += [f"{lock.path.name}: {name} has no hash" for name in lock.unhashed]
    return found
