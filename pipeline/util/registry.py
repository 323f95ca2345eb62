"""Name -> implementation registries for pluggable parts (datasets, memory systems, readers, judges).

Why: a benchmark run is declared in YAML by names; a typo or a double registration must fail
loudly at load time rather than silently run the wrong component (cf. HELM's run_spec registry).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class RegistryError(KeyError):
    """An unknown or duplicate name in a registry."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class Registry(Generic[T]):
    """A mapping from a unique name to a registered object."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    @classmethod
    def of(cls, kind: str, items: Mapping[str, T]) -> Registry[T]:
        """A registry holding ``items`` (an explicit list of built-ins; plugins are added on lookup)."""
        registry: Registry[T] = cls(kind)
        for name, obj in items.items():
            registry.add(name, obj)
        return registry

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering ``obj`` under ``name``; a second registration of a name fails."""

        def decorator(obj: T) -> T:
            self.add(name, obj)
            return obj

        return decorator

    def add(self, name: str, obj: T) -> None:
        if name in self._items:
            raise RegistryError(f"duplicate {self.kind} name {name!r}: already registered")
        self._items[name] = obj

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise RegistryError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))
