"""Configured memory systems: which apply to a dataset, their unit hash, how to build them.

The unit hash covers the system's ``version`` (bumped when its code changes what it returns for
the same params), its resolved params (code defaults included), the dataset's
``index_roles``, the embedding model (retrieval) and, for LLM systems, the LLM model; a change in
any of them must invalidate stored ingestion and retrieval rows, or a report would mix results
of two different systems under one name.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pipeline.config import BenchmarkConfig, ComponentConfig
from pipeline.corpus import HaystackSession
from pipeline.memory.base import MEMORY_SYSTEMS, MemoryDeps, MemorySystem
from pipeline.memory.params import MemoryConfigError, parse_params
from pipeline.stage import UnitSpec
from resources.embeddings import embedding_variant


def uses_encoder(cls: type[MemorySystem]) -> bool:
    """Optional class attribute ``uses_encoder`` (default True: safe, invalidates on model change)."""
    return bool(getattr(cls, "uses_encoder", True))


def uses_llm(cls: type[MemorySystem]) -> bool:
    """Optional class attribute ``uses_llm`` (default False)."""
    return bool(getattr(cls, "uses_llm", False))


def checkpoint_every(cls: type[MemorySystem]) -> int:
    """Sessions between checkpoint writes; 0 = only at the end of a haystack and on failure.

    Why per system: an LLM session costs seconds and money, so its notes are persisted after
    every session (a ``kill -9`` loses at most the session in flight). A cheap system's session
    costs microseconds; rewriting its growing checkpoint after each one would make ingestion
    quadratic in I/O for nothing, and a hard kill loses only work redone in milliseconds (a
    failure inside a session still saves progress first). Override with ``checkpoint_every``.
    """
    explicit = getattr(cls, "checkpoint_every", None)
    if explicit is not None:
        return int(explicit)
    return 1 if uses_llm(cls) else 0


@dataclass(frozen=True)
class SystemSpec:
    """One configured memory system instance for one dataset."""

    config: ComponentConfig
    cls: type[MemorySystem]
    unit_hash: str
    index_roles: tuple[str, ...] | None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def kind(self) -> str:
        return self.config.kind

    def unit(self) -> UnitSpec:
        return UnitSpec(self.config.name, self.unit_hash)

    def build(self, deps: MemoryDeps) -> MemorySystem:
        return self.cls(dict(self.config.params), deps)


def resolved_params(component: ComponentConfig, cls: type[MemorySystem]) -> dict[str, Any]:
    """Every parameter the system runs with, defaults filled in (a bad param fails loudly).

    Why hash these and not the YAML block: a changed default in the code changes what the system
    computes, so it must invalidate stored results just as a changed YAML value does.
    """
    return parse_params(cls.params_model, component.params, component.kind).model_dump(mode="json")


def unit_hash(component: ComponentConfig, cls: type[MemorySystem], bench: BenchmarkConfig, dataset: str) -> str:
    parts: dict[str, object] = {
        "system": {"kind": component.kind, "version": cls.version, "params": resolved_params(component, cls)},
        "index_roles": bench.dataset(dataset).index_roles,
    }
    if uses_encoder(cls):
        # what changes the vectors (model, backend, truncation, device); not batch size or threads
        parts["embeddings"] = embedding_variant(bench.embeddings)
    if uses_llm(cls) and bench.llm is not None:
        parts["llm"] = [bench.llm.model, bench.llm.temperature]
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def system_specs(bench: BenchmarkConfig, dataset: str) -> list[SystemSpec]:
    """The memory systems configured for ``dataset`` (unknown kind = RegistryError)."""
    load_memory_systems()
    specs = []
    for component in bench.memory_systems:
        if not component.applies_to(dataset):
            continue
        cls = MEMORY_SYSTEMS.get(component.kind)
        specs.append(
            SystemSpec(component, cls, unit_hash(component, cls, bench, dataset), bench.dataset(dataset).index_roles)
        )
    return specs


def check_buildable(bench: BenchmarkConfig, deps: MemoryDeps) -> None:
    """Build every configured system once: a wrong config (bad params, notes without an LLM)
    fails the run at its start with the system's name, before any question is processed."""
    for ds in bench.datasets:
        for spec in system_specs(bench, ds.name):
            try:
                spec.build(deps)
            except Exception as exc:
                raise MemoryConfigError(f"memory system {spec.name!r} (kind {spec.kind!r}): {exc}") from exc


def filter_roles(sessions: list[HaystackSession], roles: tuple[str, ...] | None) -> list[HaystackSession]:
    """Sessions with only the turns of ``roles`` (the dataset's ``index_roles``; None = all).

    Done by the driver, not by each system, so every system (hybrid included) indexes the same
    turns. Turn positions and ids are kept, so evidence still matches.
    """
    if roles is None:
        return sessions
    keep = set(roles)
    return [HaystackSession(s.position, s.session, tuple(t for t in s.turns if t.role in keep)) for s in sessions]


def load_memory_systems() -> None:
    """Import the modules that register memory systems (idempotent)."""
    import pipeline.memory  # noqa: F401 - its __init__ imports every system module
