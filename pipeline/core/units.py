"""Unit names: which memory system, reader, judge and repeat a stored row belongs to.

A unit is ``<system>`` (ingestion, retrievals), ``<system>/<reader>`` (answers) or
``<system>/<reader>/<judge>`` (judgments); repeat r >= 2 of a reader or judge appends ``~<r>``.
Why one owner: the stage code writes these names, and the catalog's repeat views, the stale-unit
hints and ``membench forget`` parse them back.
"""

from __future__ import annotations

UNIT_SEP = "/"
REPEAT_SEP = "~"  # not allowed in config names, so a repeat's unit never collides with a reader's


def repeat_unit(unit: str, repeat: int) -> str:
    """Repeat 1 keeps the plain unit (its rows and cache keys from before repeats existed)."""
    return unit if repeat == 1 else f"{unit}{REPEAT_SEP}{repeat}"


def system_of(unit: str) -> str:
    """The memory system of a stored unit (``rag/offline/exact_match`` -> ``rag``)."""
    return unit.split(UNIT_SEP, 1)[0]


# A memory system read at a retrieval depth: ``<system>@<c>`` is the first c ranked units of the
# system's one retrieval, read and judged as a system of its own (config ``cutoffs:``).
CUTOFF_SEP = "@"  # not allowed in config names either


def cutoff_unit(system: str, cutoff: int) -> str:
    return f"{system}{CUTOFF_SEP}{cutoff}"


def base_system(system: str) -> str:
    """The configured memory system of a retrievals unit (``rag@5`` -> ``rag``, ``rag`` -> ``rag``)."""
    return system.split(CUTOFF_SEP, 1)[0]


def cutoff_of(system: str) -> int | None:
    """The depth of a cut-off unit (``rag@5`` -> 5), None for the system's own retrieval."""
    _, sep, depth = system.partition(CUTOFF_SEP)
    return int(depth) if sep and depth.isdigit() else None
