"""Configured memory systems: which apply to a dataset, their unit hash, how to build them.

The unit hash covers the system's ``version`` (bumped when its code changes what it returns for
the same params), its resolved params (code defaults included), the dataset's ``index_roles``,
the embedding variant (retrieval) and, for LLM systems, the endpoint settings their calls take; a
change in any of them must invalidate stored ingestion and retrieval rows, or a report would mix
results of two different systems under one name.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pipeline.config.identity import endpoint_settings
from pipeline.config.model import BenchmarkConfig, ComponentConfig
from pipeline.config.specs import SECTION_MEMORY_SYSTEMS, Benchmark, ComponentSpec
from pipeline.embeddings.spec import embedding_variant
from pipeline.llm.identity import hash_extras, llm_fields
from pipeline.memory.base import MemoryDeps, MemorySystem
from pipeline.memory.params import MemoryConfigError, parse_params
from pipeline.run.stage import UnitSpec
from pipeline.store.corpus import HaystackSession

# the resolved benchmark as the memory layer sees it (pipeline/config/specs.py; readers and judges unknown here)
MemoryBenchmark = Benchmark[type[MemorySystem], Any, Any]


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
    """One configured memory system instance for one dataset (its entry resolved once, at load)."""

    entry: ComponentSpec[type[MemorySystem]]
    unit_hash: str
    settings: dict[str, object]  # the unit's identity inputs by config path (pipeline/config/identity.py)
    index_roles: tuple[str, ...] | None

    @property
    def config(self) -> ComponentConfig:
        return self.entry.config

    @property
    def cls(self) -> type[MemorySystem]:
        return self.entry.impl

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def kind(self) -> str:
        return self.entry.kind

    def unit(self) -> UnitSpec:
        return UnitSpec(self.entry.name, self.unit_hash)

    @classmethod
    def from_class(
        cls, component: ComponentConfig, impl: type[MemorySystem], unit_hash: str, index_roles: tuple[str, ...] | None
    ) -> SystemSpec:
        """A spec for a class outside any config (tests, tools): its params validated here, once."""
        params = parse_params(impl.params_model, component.params, component.kind)
        return cls(ComponentSpec(SECTION_MEMORY_SYSTEMS, None, component, impl, params), unit_hash, {}, index_roles)

    def build(self, deps: MemoryDeps) -> MemorySystem:
        """The system built with its parsed params (not parsed again)."""
        return self.cls(self.entry.params, deps)


def identity(entry: ComponentSpec[type[MemorySystem]], bench: BenchmarkConfig, dataset: str) -> tuple[str, dict]:
    """(unit hash, settings) of what the system computes on ``dataset``.

    The hash covers the kind, its code version, every param with code defaults filled in (a changed
    default must invalidate stored results just as a changed YAML value does), the dataset's
    index_roles, the embedding variant and, for LLM systems, the endpoint settings its calls take
    (pipeline/llm/identity.py). Fields added to it after rows existed enter only with a non-default
    value, so those rows keep their hash. ``settings``: the same inputs by config path, as the
    manifest records them (``membench verify`` names the one that changed)."""
    cls, name = entry.impl, entry.name
    parts: dict[str, object] = {
        "system": {"kind": entry.kind, "version": cls.version, "params": entry.params_json()},
        "index_roles": bench.dataset(dataset).index_roles,
    }
    settings: dict[str, object] = {
        f"memory_systems[{name}].kind": entry.kind,
        f"memory_systems[{name}].params": entry.params_json(),
        f"memory_systems[{name}] code version": cls.version,
        f"datasets[{dataset}].index_roles": bench.dataset(dataset).index_roles,
    }
    if uses_encoder(cls):
        # what changes the vectors (model, backend, truncation); not batch size, device or threads
        parts["embeddings"] = embedding_variant(bench.embeddings)
        emb = bench.embeddings
        settings.update({f"embeddings.{k}": getattr(emb, k) for k in ("model", "backend", "max_seq_length")})
        settings["embeddings variant"] = parts["embeddings"]
    if uses_llm(cls) and bench.llm is not None:
        fields = llm_fields(cls, entry.params_json())
        parts["llm"] = [bench.llm.model, bench.llm.temperature]
        extras = hash_extras(bench.llm, fields, ("model", "temperature"))
        if extras:
            parts["llm_extra"] = extras
        settings.update(endpoint_settings("llm", bench.llm, ("model", "temperature", *fields)))
    library = getattr(cls, "library_identity", None)
    if library is not None and library():
        parts["library"] = settings[f"memory_systems[{name}] library"] = library()
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16], settings


def unit_hash(entry: ComponentSpec[type[MemorySystem]], bench: BenchmarkConfig, dataset: str) -> str:
    """The unit hash of ``identity``."""
    return identity(entry, bench, dataset)[0]


def system_specs(bench: MemoryBenchmark, dataset: str) -> list[SystemSpec]:
    """The memory systems configured for ``dataset`` with their unit hashes: computed once per
    benchmark object and dataset (the stage driver asks for every question of a run)."""

    def build() -> tuple[SystemSpec, ...]:
        cfg = bench.config
        roles = cfg.dataset(dataset).index_roles
        return tuple(SystemSpec(e, *identity(e, cfg, dataset), roles) for e in bench.systems_for(dataset))

    return list(bench.derived(("system_specs", dataset), build))


def check_buildable(bench: MemoryBenchmark, deps: MemoryDeps) -> None:
    """Build every configured system once with the run's deps: what the config alone cannot tell
    (an encoder or cross-encoder that cannot be loaded) fails the run at its start with the
    system's entry, before any question is processed."""
    for entry in bench.memory_systems:
        try:
            entry.impl(entry.params, deps)
        except Exception as exc:
            raise MemoryConfigError(f"{bench.config.source}: {entry.where}: {exc}") from exc


def filter_roles(sessions: list[HaystackSession], roles: tuple[str, ...] | None) -> list[HaystackSession]:
    """Sessions with only the turns of ``roles`` (the dataset's ``index_roles``; None = all).

    Done by the driver, not by each system, so every system (hybrid included) indexes the same
    turns. Turn positions and ids are kept, so evidence still matches.
    """
    if roles is None:
        return sessions
    keep = set(roles)
    return [HaystackSession(s.position, s.session, tuple(t for t in s.turns if t.role in keep)) for s in sessions]
