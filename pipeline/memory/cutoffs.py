"""Reading one retrieval at several depths: the units ``<system>@<c>`` of a memory system's ``cutoffs``.

Why from ONE retrieval: accuracy against context size ("what does k = 5 buy over k = 50?") must
compare the same ranking cut at different depths; separate retrievals at each k would mix ranking
changes into the curve and cost one retrieval per depth. The system retrieves at its own top_k (set
it to the largest depth); each cut-off row holds the first c ranked units and the context the system
renders from them (``RetrievalResult.at_depth``), and is read and judged as a system of its own
(answers ``<system>@<c>/<reader>``, judgments ``.../<judge>``), cached by its own unit hash: the
system's unit hash (every param, code version, models) plus the depth.

A system whose context is not built from its ranking (``full_context``, LoCoMo's official
retrievers) has no ``at_depth``: its cut-off rows fail with that reason, never a silent copy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from pipeline.core.units import cutoff_unit
from pipeline.memory.base import RetrievalResult
from pipeline.memory.systems import MemoryBenchmark, SystemSpec, system_specs
from pipeline.run.stage import UnitSpec

CUTOFF_VERSION = 1  # bump when what a cut-off row holds changes for the same retrieval


class DepthUnavailable(ValueError):
    """The memory system's retrieval cannot be cut at a depth (see the module doc)."""


def cutoff_hash(system_hash: str, cutoff: int) -> str:
    """The unit hash of ``<system>@<cutoff>``: the system's own plus the depth."""
    return hashlib.sha256(f"{system_hash}|cutoff={cutoff}|v{CUTOFF_VERSION}".encode()).hexdigest()[:16]


def depth_units(spec: SystemSpec) -> list[tuple[UnitSpec, int]]:
    """(unit, depth) of each cut-off of ``spec``, in the config's order."""
    return [(UnitSpec(cutoff_unit(spec.name, c), cutoff_hash(spec.unit_hash, c)), c) for c in spec.config.cutoffs]


def reading_systems(bench: MemoryBenchmark, dataset: str) -> list[tuple[str, str]]:
    """(name, unit hash) of everything a reader reads on ``dataset``: each system, then its cut-offs."""
    out = []
    for spec in system_specs(bench, dataset):
        out.append((spec.name, spec.unit_hash))
        out += [(unit.unit, unit.unit_hash) for unit, _ in depth_units(spec)]
    return out


def retrieval_units_for(bench: MemoryBenchmark) -> Callable[[str], list[UnitSpec]]:
    """The retrievals stage's ``units_for``: every system's unit and its cut-off units."""
    return lambda dataset: [UnitSpec(name, h) for name, h in reading_systems(bench, dataset)]


def at_depth(result: RetrievalResult, cutoff: int, kind: str) -> RetrievalResult:
    """``result`` cut to its first ``cutoff`` ranked units (DepthUnavailable when the system cannot)."""
    if result.at_depth is None:
        raise DepthUnavailable(f"memory system kind {kind!r} renders no context from its ranking: it cannot be "
                               "read at a depth (remove its 'cutoffs')")  # fmt: skip
    return result.at_depth(cutoff)
