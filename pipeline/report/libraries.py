"""Which libraries that can move a number ran at other versions in two runs (or several): read from
each run's manifest.json (pipeline/provenance/libraries.py writes them).

Why in compare and leaderboard: a difference between two runs is read as the effect of what the
config changed; when numpy or a product library changed too, the reader must know before believing it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.catalog.manifest import MANIFEST_JSON


def recorded_libraries(root: Path) -> dict[str, str] | None:
    """library -> version of the run at ``root``; None when its manifest records none (or is missing)."""
    try:
        manifest = json.loads((root / MANIFEST_JSON).read_text())
    except (OSError, ValueError):
        return None
    libraries = manifest.get("libraries") if isinstance(manifest, dict) else None
    return dict(libraries) if isinstance(libraries, Mapping) else None


Versions = Mapping[str, str] | None  # library -> version of one run; None: its manifest records none


def differing_versions(runs: Mapping[str, Versions]) -> tuple[dict[str, dict[str, list[str]]], list[str]]:
    """(library -> version -> runs, for libraries recorded in several runs at more than one version;
    the runs that record no versions). A library recorded in one run only is not a difference: the
    other run could not have used it."""
    by_library: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for run, libraries in runs.items():
        for name, version in (libraries or {}).items():
            by_library[name][version].append(run)
    differ = {
        name: {v: list(r) for v, r in versions.items()}
        for name, versions in sorted(by_library.items())
        if len(versions) > 1
    }
    return differ, [run for run, libraries in runs.items() if libraries is None]


def difference_lines(runs: Mapping[str, Versions]) -> list[str]:
    """One line per library at several versions across ``runs`` (name -> recorded versions), and one
    naming the runs whose manifests record no versions; empty when every run used the same ones."""
    differ, unknown = differing_versions(runs)
    lines = [
        f"{name} differs: " + "; ".join(f"{v} in {', '.join(rs)}" for v, rs in sorted(versions.items()))
        for name, versions in differ.items()
    ]
    if unknown:
        lines.append(f"library versions unknown for {', '.join(unknown)} (its manifest records none)")
    return lines


def versions_note(labels: Sequence[str], roots: Sequence[Path]) -> list[str]:
    """``difference_lines`` of the runs at ``roots``, named by ``labels``."""
    return difference_lines({label: recorded_libraries(root) for label, root in zip(labels, roots, strict=True)})
