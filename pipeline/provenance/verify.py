"""``membench verify``: recompute what manifest.json records and say, check by check, whether it holds.

Why recompute and not re-read: the manifest is a claim about files that can change after it was
written (a dataset file replaced, a result row edited, a backfill). Each dataset file is hashed
again, each stored row file (retrievals, answers, judgments) is hashed again, and every headline
number is recomputed from the stored rows through the same catalog views the report reads (one
definition per metric). Hashes cached by size and mtime are never used here.

One line per check: ``ok``, ``MISMATCH`` (names the file and the manifest field it contradicts),
or ``note`` (information that is not a failure, such as the code having moved on).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.config.model import ConfigError, load_config
from pipeline.kinds.resolve import resolve_config
from pipeline.provenance.identity import stale_units, stored_units
from pipeline.provenance.manifest import (
    HEADLINE_FIELDS,
    HEADLINE_KEY,
    MANIFEST_JSON,
    ROW_STAGES,
    code_version,
    headline_rows,
    read_manifest,
)
from pipeline.provenance.releases import file_sha256
from pipeline.store.results import ResultStore

OK, MISMATCH, NOTE = "ok", "MISMATCH", "note"
MAX_FILE_LINES = 10  # per stage: more bad files are summed up in one line
_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Check:
    """One check: its status, what it is about, and what was found."""

    status: str
    subject: str
    message: str

    def line(self) -> str:
        return f"{self.status:8} {self.subject}: {self.message}"


def _short(sha: str | None) -> str:
    return (sha or "none")[:12]


def dataset_checks(manifest: Mapping[str, Any]) -> list[Check]:
    """Each dataset file hashed again against ``datasets[i].sha256``."""
    out = []
    for i, d in enumerate(manifest.get("datasets", [])):
        subject, path = f"dataset {d.get('dataset')}", Path(str(d.get("resolved_path")))
        field = f"{MANIFEST_JSON} datasets[{i}].sha256"
        if not path.is_file():
            out.append(
                Check(MISMATCH, subject, f"{path}: file not found ({MANIFEST_JSON} datasets[{i}].resolved_path)")
            )
            continue
        sha = file_sha256(path)
        if sha != d.get("sha256"):
            out.append(
                Check(MISMATCH, subject, f"{path}: sha256 {_short(sha)} differs from {field} {_short(d.get('sha256'))}")
            )
        else:
            release = d.get("release") or "no known official release"
            out.append(Check(OK, subject, f"{path}: sha256 {_short(sha)} as recorded; release: {release}"))
    return out


def row_checks(root: Path, manifest: Mapping[str, Any]) -> list[Check]:
    """Each stored row file of ROW_STAGES hashed again against ``stored_rows.<stage>``."""
    out = []
    recorded_all = manifest.get("stored_rows") or {}
    for stage in ROW_STAGES:
        recorded: Mapping[str, Any] = recorded_all.get(stage) or {}
        folder = root / "parquet" / stage
        present = {f.name for f in folder.glob("*.parquet")}
        problems = []
        for name in sorted(set(recorded) | present):
            rel = f"parquet/{stage}/{name}"
            if name not in present:
                problems.append(f"{rel}: missing (listed in {MANIFEST_JSON} stored_rows.{stage})")
            elif name not in recorded:
                problems.append(f"{rel}: not in {MANIFEST_JSON} stored_rows.{stage} (written after the manifest)")
            elif file_sha256(folder / name) != recorded[name].get("sha256"):
                problems.append(f"{rel}: sha256 differs from {MANIFEST_JSON} stored_rows.{stage}[{name!r}].sha256")
        subject = f"rows {stage}"
        out += [Check(MISMATCH, subject, p) for p in problems[:MAX_FILE_LINES]]
        if len(problems) > MAX_FILE_LINES:
            out.append(Check(MISMATCH, subject, f"... and {len(problems) - MAX_FILE_LINES} more files"))
        if not problems:
            out.append(Check(OK, subject, f"{len(present)} files as recorded"))
    return out


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return not math.isclose(float(a), float(b), rel_tol=0, abs_tol=_TOLERANCE)
    return bool(a != b)


def headline_checks(root: Path, manifest: Mapping[str, Any]) -> list[Check]:
    """Every headline row recomputed from the stored rows (accuracy_report) against ``headline[i]``."""
    with ResultStore(results_dir=str(root)).connect() as con:
        now = {tuple(r[k] for k in HEADLINE_KEY): r for r in headline_rows(con)}
    out = []
    recorded = manifest.get("headline") or []
    for i, row in enumerate(recorded):
        key = tuple(row.get(k) for k in HEADLINE_KEY)
        subject = "headline " + "/".join(str(k) for k in key)
        current = now.pop(key, None)
        if current is None:
            out.append(Check(MISMATCH, subject, f"no such row in the stored results ({MANIFEST_JSON} headline[{i}])"))
            continue
        bad = [f for f in HEADLINE_FIELDS if _differs(current.get(f), row.get(f))]
        if bad:
            text = "; ".join(
                f"{f} is {current.get(f)} from the stored rows, {MANIFEST_JSON} headline[{i}].{f} says {row.get(f)}"
                for f in bad
            )
            out.append(Check(MISMATCH, subject, text))
        else:
            out.append(Check(OK, subject, f"{row.get('headline_value')} (n_scored {row.get('n_scored')}) recomputed"))
    for key in sorted(now, key=str):
        subject = "headline " + "/".join(str(k) for k in key)
        out.append(Check(MISMATCH, subject, f"in the stored results but not in {MANIFEST_JSON} headline"))
    return out


def code_note(manifest: Mapping[str, Any]) -> Check:
    """The code that wrote the manifest vs the code running now (information, not a failure)."""
    then, now = manifest.get("code") or {}, code_version()
    same = then.get("pipeline_sha256") == now["pipeline_sha256"]
    text = (
        f"manifest written by membench {then.get('package_version')} at commit {_short(then.get('git_commit'))}; "
        + ("same pipeline code now" if same else f"the pipeline code differs now (commit {_short(now['git_commit'])})")
    )
    return Check(NOTE, "code", text)


def identity_checks(root: Path, manifest: Mapping[str, Any], config: str | None) -> list[Check]:
    """Every stored unit hash against what the config makes now: a stale unit is a MISMATCH naming
    the config fields whose values differ from the ones its rows were made with (the manifest's
    ``identity``). ``config``: the config file (default: the one the manifest names)."""
    source = config or (manifest.get("config") or {}).get("source")
    if not source or not Path(source).is_file():
        return [Check(NOTE, "settings", f"config file {source or '(none recorded)'} not found: settings not compared")]
    try:
        bench = resolve_config(load_config(str(Path(source).resolve())))  # as the file says now (no cache)
    except ConfigError as exc:
        return [Check(NOTE, "settings", f"{source} does not load ({exc}): settings not compared")]
    with ResultStore(results_dir=str(root)).connect() as con:
        stored = stored_units(con)
    stale = stale_units(bench, stored, manifest)
    out = [Check(MISMATCH, subject, f"{reason} (a run recomputes them)") for subject, reason in stale]
    return out or [Check(OK, "settings", f"every stored unit was made with what {source} says now")]


def verify(root: Path, config: str | None = None) -> list[Check]:
    """Every check of the results folder ``root`` (ManifestError when it has no readable manifest);
    ``config``: the config to compare the stored rows' settings with (default: the manifest's)."""
    manifest = read_manifest(root / MANIFEST_JSON)
    return [
        *dataset_checks(manifest),
        *row_checks(root, manifest),
        *headline_checks(root, manifest),
        *identity_checks(root, manifest, config),
        code_note(manifest),
    ]
