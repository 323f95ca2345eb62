"""Stored failed rows of memory systems a config no longer has, and the one-line hint naming them.

Why: a stored failed row keeps its question failed on every later run (the progress rule: partition
status, ``membench progress`` and the report views agree on it), and when its memory system was
renamed or removed no configured unit ever recomputes it. The rule stays; the message says whose
rows they are and that ``membench forget <system>`` removes them (pipeline/cli/forget.py).

A unit is ``system``, ``system/reader[~r]`` or ``system/reader/judge[~r]``; config names cannot
hold ``/`` or ``~`` (pipeline/config/model.py), so the system is the unit's first segment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.config.model import BenchmarkConfig
from pipeline.core.partitions import dataset_of
from pipeline.core.status import STATUS_FAILED
from pipeline.core.units import cutoff_unit, system_of
from pipeline.run.status_index import StageIndex
from pipeline.store.results import STAGE_TABLES, ResultStore


def row_system(unit: str, stage: str) -> str | None:
    """The memory system of a stored row of ``stage``; None for the driver's "no canonical record"
    marker, whose unit is the stage's own name (pipeline/run/stage.py ``pending``)."""
    return None if unit == stage else system_of(unit)


def configured_systems(cfg: BenchmarkConfig, dataset: str) -> set[str]:
    """Names of the memory systems ``cfg`` runs on ``dataset`` (their cut-off units ``<system>@<c>`` too)."""
    systems = [s for s in cfg.memory_systems if s.applies_to(dataset)]
    return {s.name for s in systems} | {cutoff_unit(s.name, c) for s in systems for c in s.cutoffs}


def stale_systems(rows: Iterable[Mapping[str, Any]], configured: set[str], stage: str) -> list[str]:
    """Systems (sorted) of failed rows whose system is not in ``configured`` (never the stage's marker)."""
    failed = (row_system(r["unit"], stage) for r in rows if r["status"] == STATUS_FAILED)
    return sorted({system for system in failed if system is not None and system not in configured})


def stale_note(systems: list[str]) -> str:
    """The hint put before a failure message (same line) when stale systems' rows fail it."""
    names = ", ".join(repr(s) for s in systems)
    return (
        f"[stored failed rows of memory system {names}, not in the config any more: "
        f"`membench forget {' '.join(systems)}` removes them]"
    )


def with_note(error: str, systems: list[str]) -> str:
    """``error`` after the stale-systems hint (first: messages are cut after a few hundred characters),
    or unchanged when there are none."""
    return f"{stale_note(systems)} {error}" if systems else error


class StaleFinder:
    """Stale systems of stored questions, read through each stage's status index (pipeline/run/status_index.py).

    Why the index: a run's check step may explain thousands of failed questions; the index holds
    their status rows, so only files written since it was saved are opened. Reads only.
    """

    def __init__(self, store: ResultStore, cfg: BenchmarkConfig) -> None:
        self.store = store
        self.cfg = cfg
        self._indexes: dict[str, StageIndex] = {}

    def systems(self, stage: str, key: str) -> list[str]:
        """Stale systems of one question's stored rows in ``stage`` (none for the canonical stage)."""
        if stage not in STAGE_TABLES:
            return []
        if stage not in self._indexes:
            self._indexes[stage] = StageIndex(self.store.parquet_root, stage)
        rows = self._indexes[stage].rows_for(key) or []
        return stale_systems(rows, configured_systems(self.cfg, dataset_of(key)), stage)


def explain_failures(
    store: ResultStore, cfg: BenchmarkConfig, stage: str, failed: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """(key, error) pairs of ``stage`` with the hint added where stale systems' rows fail the key."""
    finder = StaleFinder(store, cfg)
    return [(key, with_note(error, finder.systems(stage, key))) for key, error in failed]
