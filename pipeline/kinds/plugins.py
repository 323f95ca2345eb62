"""Plugins: memory systems, readers and judges that live outside this package.

Why: a user benchmarking their own memory must not have to edit membench. Two ways, both
resolved when the config is resolved (pipeline/kinds/resolve.py), before any asset runs:

- ``kind: package.module:Name`` in a config entry imports ``Name`` from ``package.module`` and
  registers it under that exact string (so the unit hashes and the ``system_kind`` /
  ``reader_kind`` columns record where it came from);
- a Python entry point in group ``membench.memory_systems``, ``membench.readers`` or
  ``membench.judges`` (``[project.entry-points."membench.memory_systems"] mine = "pkg.mod:Name"``)
  makes ``kind: mine`` available to every config once the package is installed.

An import error, a missing attribute or an object of the wrong type fails loudly with the
reference in the message; a plugin never silently falls back to a built-in. Entry points are
loaded only when a config names them, so a broken unrelated plugin cannot break a run.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import TypeVar

from pipeline.util.registry import Registry, RegistryError

T = TypeVar("T")

GROUP_MEMORY_SYSTEMS = "membench.memory_systems"
GROUP_READERS = "membench.readers"
GROUP_JUDGES = "membench.judges"

_lock = threading.Lock()


class PluginError(ValueError):
    """A plugin reference that cannot be imported or is not the kind of object its section needs."""


def is_import_ref(kind: str) -> bool:
    """``package.module:Name`` (a plugin imported by the config) rather than a registered name."""
    return ":" in kind


def import_ref(ref: str) -> object:
    """The object ``Name`` (dotted attributes allowed) of ``package.module:Name``."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise PluginError(f"{ref!r} is not of the form 'package.module:Name'")
    try:
        obj: object = importlib.import_module(module_name)
    except Exception as exc:
        raise PluginError(f"cannot import module {module_name!r} of {ref!r}: {type(exc).__name__}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PluginError(f"module {module_name!r} has no attribute {attr!r} (from {ref!r})") from None
    return obj


def group_entry_points(group: str) -> dict[str, EntryPoint]:
    """Installed entry points of ``group`` by name."""
    return {ep.name: ep for ep in entry_points(group=group)}


def lookup(registry: Registry[T], group: str, kind: str, check: Callable[[object], T]) -> T:
    """The implementation of ``kind``: registered, else imported (``pkg.mod:Name``) or loaded from
    an entry point of ``group``, checked with ``check`` and registered under ``kind``.

    Raises RegistryError for an unknown name (listing built-ins and installed entry points) and
    PluginError for a plugin that cannot be imported or has the wrong type.
    """
    with _lock:
        if kind in registry:
            return registry.get(kind)
        if is_import_ref(kind):
            obj = import_ref(kind)
            origin = kind
        else:
            eps = group_entry_points(group)
            if kind not in eps:
                known = ", ".join(sorted({*registry.names(), *eps})) or "(none)"
                raise RegistryError(
                    f"unknown {registry.kind} {kind!r}; known: {known} (or a plugin 'package.module:Name')"
                )
            ep = eps[kind]
            try:
                obj = ep.load()
            except Exception as exc:
                raise PluginError(
                    f"entry point {kind!r} = {ep.value!r} (group {group}) cannot be loaded: {type(exc).__name__}: {exc}"
                ) from exc
            origin = f"entry point {kind!r} = {ep.value!r} (group {group})"
        try:
            impl = check(obj)
        except PluginError as exc:
            raise PluginError(f"{origin}: {exc}") from None
        registry.add(kind, impl)
        return impl


def require_class(obj: object, what: str, attributes: tuple[str, ...]) -> type:
    """``obj`` as a class that has every one of ``attributes`` (a PluginError names what is missing)."""
    if not isinstance(obj, type):
        raise PluginError(f"expected a {what} class, got {type(obj).__name__} {obj!r}")
    missing = [a for a in attributes if not hasattr(obj, a)]
    if missing:
        raise PluginError(f"{obj.__module__}.{obj.__qualname__} is not a {what}: missing {missing}")
    return obj
