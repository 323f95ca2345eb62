"""What each stage's stored rows were made with, and whether the config still says it.

Why: a unit's rows are reused while its unit hash is unchanged, and the hash covers every setting
that changes a row (pipeline/config/identity.py). The hash says *that* a setting changed, not
*which*: the manifest records, per stage, the settings behind every unit hash the results folder
holds (carried over from the previous manifest for hashes the config no longer makes), so
``membench verify`` can name the field when the config's identity differs from what produced a
stored row: ``answers sample_lme/rag/gpt: stored rows made with llm.temperature=0.0, the config
says 0.9``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pipeline.config.identity import differing
from pipeline.config.specs import Benchmark
from pipeline.core.partitions import dataset_of
from pipeline.judges.run import judgment_units
from pipeline.llm.client import ROLE_JUDGES, client_for
from pipeline.memory.systems import system_specs
from pipeline.readers.run import answer_units
from pipeline.run.status_index import StageIndex
from pipeline.store.results import UNIT_HASH

STAGES = ("ingestion", "retrievals", "answers", "judgments")
Key = tuple[str, str, str]  # (stage, dataset, unit)


@dataclass(frozen=True)
class Made:
    """The hash of a unit and the settings behind it (None: not recorded when its rows were made)."""

    unit_hash: str
    settings: Mapping[str, Any] | None


def current_units(bench: Benchmark[Any, Any, Any]) -> dict[Key, Made]:
    """Every unit the config makes, per stage and dataset, with its hash and settings."""
    cfg = bench.config
    judge_client = client_for(cfg, ROLE_JUDGES)  # only its model is read: nothing is sent
    out: dict[Key, Made] = {}
    for ds in cfg.datasets:
        for system in system_specs(bench, ds.name):
            for stage in ("ingestion", "retrievals"):
                out[(stage, ds.name, system.name)] = Made(system.unit_hash, system.settings)
        for au in answer_units(bench, ds.name):
            out[("answers", ds.name, au.spec.unit)] = Made(au.spec.unit_hash, au.settings)
        for ju in judgment_units(bench, ds.name, judge_client):
            out[("judgments", ds.name, ju.spec.unit)] = Made(ju.spec.unit_hash, ju.settings)
    return out


def stored_units(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str, str, str]]:
    """(stage, dataset, unit, unit_hash) of every stored row's unit (the stages' views)."""
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    found: set[tuple[str, str, str, str]] = set()
    for stage in STAGES:
        if stage in views:
            sql = f"SELECT DISTINCT dataset, unit, unit_hash FROM {stage} WHERE unit_hash IS NOT NULL"
            found |= {(stage, d, u, h) for d, u, h in con.execute(sql).fetchall()}
    return found


def indexed_units(parquet_root: Path) -> set[tuple[str, str, str, str]]:
    """``stored_units`` from the stages' status indexes (pipeline/run/status_index.py) instead of the views.

    Why: the views read every stage file (2,000 questions: ~8k files, ~4.6 s of a run's end), the
    indexes one file per stage plus the files written since they were saved. Same rows: a stage
    file's rows all belong to the dataset its partition key names (pipeline/run/stage.py).
    """
    found: set[tuple[str, str, str, str]] = set()
    for stage in STAGES:
        index = StageIndex(parquet_root, stage)
        for key in sorted(index.files):
            dataset = dataset_of(key)
            rows = index.rows_for(key) or ()
            found |= {(stage, dataset, r["unit"], r[UNIT_HASH]) for r in rows if r[UNIT_HASH] is not None}
        index.save()  # files read here are indexed for the next reader
    return found


def _recorded(previous: Mapping[str, Any] | None) -> dict[tuple[str, str, str, str], Mapping[str, Any]]:
    entries: Iterable[Mapping[str, Any]] = (previous or {}).get("identity") or []
    return {(e["stage"], e["dataset"], e["unit"], e["unit_hash"]): e["settings"] for e in entries if e.get("settings")}


def manifest_identity(
    bench: Benchmark[Any, Any, Any], stored: Iterable[tuple[str, str, str, str]], previous: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The manifest's ``identity``: one entry per ``stored`` (stage, dataset, unit, unit hash) of a unit
    the config still makes, with the settings it was made with (None when nobody recorded them)."""
    now, before = current_units(bench), _recorded(previous)
    out = []
    for stage, dataset, unit, unit_hash in sorted(stored):
        made = now.get((stage, dataset, unit))
        if made is None:
            continue  # a unit the config no longer has: `membench forget` is for those
        settings = made.settings if made.unit_hash == unit_hash else before.get((stage, dataset, unit, unit_hash))
        out.append({"stage": stage, "dataset": dataset, "unit": unit, "unit_hash": unit_hash, "settings": settings})
    return out


def _value(v: Any) -> str:
    return "unset" if v is None else str(v)


def stale_reason(stored: Mapping[str, Any] | None, current: Mapping[str, Any]) -> str:
    """Why rows made with ``stored`` settings are not what the config makes now, by field."""
    if stored is None:
        return "made with settings no manifest recorded (the run that made them ended before writing one)"
    fields = differing(stored, current)
    if not fields:
        return "made by other code (a version, prompt or library changed; no config field differs)"
    return "; ".join(f"made with {f}={_value(stored.get(f))}, the config says {_value(current.get(f))}" for f in fields)


def stale_units(
    bench: Benchmark[Any, Any, Any], stored: Iterable[tuple[str, str, str, str]], recorded: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """(subject, reason) for every stored unit hash the config would not make now."""
    now, before = current_units(bench), _recorded(recorded)
    out = []
    for stage, dataset, unit, unit_hash in sorted(stored):
        made = now.get((stage, dataset, unit))
        if made is None or made.unit_hash == unit_hash:
            continue
        reason = stale_reason(before.get((stage, dataset, unit, unit_hash)), made.settings or {})
        out.append((f"{stage} {dataset}/{unit}", f"stored rows {reason}"))
    return out
