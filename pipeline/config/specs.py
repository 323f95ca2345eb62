"""The resolved benchmark: one frozen, typed object from a config, handed down to every stage.

Why here, below the memory systems, readers and judges: the resolver (pipeline/kinds/resolve.py)
sits above them (it looks their kinds up), and they need the resolved entries. So the resolver
builds a ``Benchmark`` once per process and passes it down; nothing below imports the resolver.
``Benchmark`` is generic in the three implementation types, so each layer names the part it
knows (``Benchmark[type[MemorySystem], Any, Any]`` in the memory layer) without importing the
layers above.

What is derived from the benchmark alone (unit hashes, the units of a dataset) is computed once per
object (``derived``), not once per question or per call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel

from pipeline.config.model import BenchmarkConfig, ComponentConfig

T = TypeVar("T")
S = TypeVar("S")  # memory system implementation (a class)
R = TypeVar("R")  # reader implementation (a class)
J = TypeVar("J")  # judge implementation (a JudgeSpec)
V = TypeVar("V")

SECTION_MEMORY_SYSTEMS = "memory_systems"
SECTION_READERS = "readers"
SECTION_JUDGES = "judges"


def entry_label(section: str, index: int | None, name: str) -> str:
    return f"{section}[{index}] (name: {name})" if index is not None else f"{section} default (name: {name})"


@dataclass(frozen=True)
class ComponentSpec(Generic[T]):
    """One config entry, resolved: its registered implementation and its validated params.

    ``impl`` is a memory system class, a reader class or a JudgeSpec; ``params`` is an instance
    of the component's params model (frozen; code defaults filled in). ``index`` is the entry's
    position in its section (None for a default the config did not write).
    """

    section: str
    index: int | None
    config: ComponentConfig
    impl: T
    params: BaseModel

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def kind(self) -> str:
        return self.config.kind

    @property
    def where(self) -> str:
        """``memory_systems[2] (name: hybrid)``: how an error message names this entry."""
        return entry_label(self.section, self.index, self.config.name)

    def params_json(self) -> dict[str, Any]:
        """Every parameter with defaults filled in, JSON-typed (what unit hashes cover)."""
        return self.params.model_dump(mode="json")

    def params_given(self) -> dict[str, Any]:
        """Only the parameters the config set, JSON-typed (judges hash these, as before)."""
        return self.params.model_dump(mode="json", exclude_unset=True)

    def applies_to(self, dataset: str) -> bool:
        return self.config.applies_to(dataset)


@dataclass(frozen=True)
class Benchmark(Generic[S, R, J]):
    """A benchmark config with every memory system, reader and judge resolved (pipeline/kinds/resolve.py).

    ``readers`` are the config's or the default offline reader; ``judges`` the config's only;
    ``default_judges`` (metric -> resolved built-in judge) are what a dataset family gets when the
    config has no ``judges:``.
    """

    config: BenchmarkConfig
    memory_systems: tuple[ComponentSpec[S], ...]
    readers: tuple[ComponentSpec[R], ...]
    judges: tuple[ComponentSpec[J], ...]
    default_judges: Mapping[str, ComponentSpec[J]] = field(default_factory=dict)
    _derived: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def systems_for(self, dataset: str) -> list[ComponentSpec[S]]:
        return [s for s in self.memory_systems if s.applies_to(dataset)]

    def readers_for(self, dataset: str | None = None) -> list[ComponentSpec[R]]:
        return [r for r in self.readers if dataset is None or r.applies_to(dataset)]

    def reader(self, name: str) -> ComponentSpec[R]:
        for r in self.readers:
            if r.name == name:
                return r
        raise KeyError(f"reader {name!r} is not in config {self.config.source}")

    def derived(self, key: Hashable, build: Callable[[], V]) -> V:
        """``build()`` once per benchmark object and ``key`` (unit hashes and units of a dataset).

        Why on the object and not in a global cache: the benchmark is built once per process and
        handed down, so whatever is derived from it lives and dies with it.
        """
        with self._lock:
            if key in self._derived:
                return cast(V, self._derived[key])
        value = build()
        with self._lock:
            return cast(V, self._derived.setdefault(key, value))

    def summary(self) -> str:
        """One line: what the config runs (``membench check-config`` prints it)."""
        cfg = self.config

        def names(specs: tuple[ComponentSpec[Any], ...]) -> str:
            return ", ".join(f"{s.name} ({s.kind})" for s in specs) or "none"

        judges = names(self.judges) if self.judges else "the default judges of each dataset family"
        return (
            f"{cfg.source}: ok: config {cfg.config_name!r}; {len(cfg.datasets)} dataset(s) "
            f"({', '.join(d.name for d in cfg.datasets)}); memory systems: {names(self.memory_systems)}; "
            f"readers: {names(self.readers)}; judges: {judges}; llm: {cfg.llm.model if cfg.llm else 'none'}"
        )
