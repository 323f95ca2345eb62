"""``membench forget SYSTEM ...``: remove a memory system's stored results from a config's results folder.

Why: a stored failed row of a memory system the config no longer has keeps its question failed on
every later run (the progress rule, pipeline/run/stage.py ``pending``), and no configured unit
ever recomputes it. Renaming or removing a system therefore needs a way to drop its rows; this is
it. A name that is still configured may be forgotten too: the next run recomputes it.

What belongs to a system:
- its rows in every per-question stage (``parquet/<stage>/<key>.parquet``; a unit's first segment
  is its system, pipeline/run/stale.py). Each touched file is rewritten through the store's
  atomic write with every other row as it was; a file left without rows is removed. The stage's
  status index (pipeline/run/status_index.py) is updated so it never serves the old rows;
- its ingestion checkpoints ``parquet/memory/<system>/`` (keyed by the name). The folder is first
  renamed out of ``parquet/`` (atomic), then deleted: a kill leaves no half-read checkpoint set;
- a product's state ``products/<kind>-<params hash>/`` is keyed by kind and params, NOT by name:
  two names with the same params share it. It is removed only for a forgotten system that is still
  configured (its params are known) and that no other configured system uses; otherwise it is
  kept and the plan says why.

- its rows in the per-dataset retrieval-metrics tables derived from the retrievals, so the views
  show the change at once (the next run would rebuild them anyway).

Nothing else is touched: the report is rebuilt by the next run from the stage files, and the LLM
call log is kept (it records what was spent). ``--yes`` refuses while a run of the same config is
live and holds the lock a starting run claims its config with.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config.model import BenchmarkConfig, ConfigError
from pipeline.core.status import STATUS_FAILED
from pipeline.core.units import system_of
from pipeline.memory.checkpoint import MEMORY_STAGE_DIR
from pipeline.products.state import PRODUCTS_SUBDIR
from pipeline.run.stale import row_system
from pipeline.run.status_index import StageIndex
from pipeline.store.results import STAGE_TABLES, ResultStore

# per-dataset tables computed from the retrievals, one row per (question, system, level): their rows
# of a forgotten system go too, so the views show the change at once (the next run rebuilds them anyway)
DERIVED_TABLES = ("retrieval_metrics", "agentic_retrieval_metrics")
TRASH_DIR = ".forgotten"  # <results>/.forgotten/<uuid>: folders renamed out of parquet/, then deleted


@dataclass(frozen=True)
class StageHits:
    """One stage's stored rows of the forgotten systems."""

    stage: str
    keys: tuple[str, ...]  # questions with at least one such row
    rows: int
    failed: int
    systems: frozenset[str]  # the forgotten systems that have rows here


@dataclass(frozen=True)
class KeptState:
    """A product state dir that is not removed, and why."""

    path: Path
    reason: str


@dataclass(frozen=True)
class ForgetPlan:
    """What ``membench forget`` removes (dry run: prints it; ``--yes``: ``apply_plan``)."""

    systems: tuple[str, ...]
    still_configured: tuple[str, ...]  # forgotten names the config still has: the next run recomputes them
    stages: tuple[StageHits, ...]
    checkpoints: tuple[Path, ...]  # parquet/memory/<system> folders
    product_dirs: tuple[Path, ...]  # products/<kind>-<hash> folders removed
    kept: tuple[KeptState, ...] = field(default=())
    without_rows: tuple[str, ...] = field(default=())  # names with nothing stored
    derived: tuple[tuple[Path, int], ...] = field(default=())  # (derived table file, its rows of the systems)

    @property
    def empty(self) -> bool:
        return not (self.stages or self.checkpoints or self.product_dirs or self.derived)


def stage_hits(store: ResultStore, stage: str, systems: set[str]) -> StageHits | None:
    """The stage's rows of ``systems``, found through the stage's status index (no file written)."""
    index = StageIndex(store.parquet_root, stage)
    keys: list[str] = []
    found: set[str] = set()
    rows = failed = 0
    for key in sorted(index.files):
        hits = [r for r in index.rows_for(key) or () if row_system(r["unit"], stage) in systems]
        if hits:
            keys.append(key)
            rows += len(hits)
            failed += sum(r["status"] == STATUS_FAILED for r in hits)
            found |= {system_of(r["unit"]) for r in hits}
    return StageHits(stage, tuple(keys), rows, failed, frozenset(found)) if keys else None


def _systems_mask(table: pa.Table, systems: set[str]) -> pa.Array:
    """True for the rows of a derived table NOT of ``systems`` (by its ``system`` column)."""
    return pa.array([v not in systems for v in table.column("system").to_pylist()])


def derived_hits(store: ResultStore, systems: set[str]) -> list[tuple[Path, int]]:
    """(file, rows of ``systems``) of the derived tables (DERIVED_TABLES) that hold such rows."""
    out: list[tuple[Path, int]] = []
    for name in DERIVED_TABLES:
        for path in sorted((store.parquet_root / name).glob("*.parquet")):
            if "system" not in pq.read_schema(path).names:
                continue
            column = pq.read_table(path, columns=["system"]).column("system").to_pylist()
            n = sum(v in systems for v in column)
            if n:
                out.append((path, n))
    return out


def forget_derived(store: ResultStore, paths: Iterable[Path], systems: set[str]) -> None:
    """Rewrite each derived table file without the rows of ``systems`` (atomic; an emptied file is removed)."""
    for path in paths:
        table = pq.read_table(path)
        kept = table.filter(_systems_mask(table, systems))
        if kept.num_rows == 0:
            path.unlink(missing_ok=True)
        elif kept.num_rows < table.num_rows:
            store.write(path, kept)


def checkpoint_dirs(store: ResultStore, systems: Iterable[str]) -> list[Path]:
    """The ingestion checkpoint folders of ``systems`` that exist."""
    base = store.parquet_root / MEMORY_STAGE_DIR
    return [base / s for s in sorted(systems) if (base / s).is_dir()]


def product_state_dirs(cfg: BenchmarkConfig) -> dict[str, str]:
    """Configured system name -> its product state dir name (``<kind>-<params hash>``), products only.

    Raises ConfigError when the config cannot be resolved (a product library not installed, ...).
    """
    from pipeline.kinds.resolve import resolve_config
    from pipeline.products.base import ProductMemory, params_hash_of

    out: dict[str, str] = {}
    for entry in resolve_config(cfg).memory_systems:
        impl = entry.impl
        if isinstance(impl, type) and issubclass(impl, ProductMemory):
            out[entry.name] = f"{impl.kind}-{params_hash_of(impl.kind, impl.version, entry.params.model_dump())}"
    return out


def plan_products(store: ResultStore, cfg: BenchmarkConfig, systems: set[str]) -> tuple[list[Path], list[KeptState]]:
    """Product state dirs to remove for ``systems``, and those kept with the reason."""
    root = store.root / PRODUCTS_SUBDIR
    if not root.is_dir():
        return [], []
    try:
        dirs = product_state_dirs(cfg)
    except ConfigError as exc:
        return [], [KeptState(root, f"not examined: the config does not resolve ({' '.join(str(exc).split())})")]
    remove: list[Path] = []
    kept: list[KeptState] = []
    for name in sorted(systems & set(dirs)):
        path = root / dirs[name]
        users = sorted(n for n, d in dirs.items() if d == dirs[name] and n not in systems)
        if not path.is_dir():
            continue
        if users:
            kept.append(KeptState(path, f"same kind and params as configured system(s) {', '.join(users)}: shared"))
        elif path not in remove:
            remove.append(path)
    used = set(dirs.values())
    kinds = checkpoint_kinds(store, systems - set(dirs))  # unconfigured: only their checkpoints tell the kind
    for path in sorted(p for p in root.iterdir() if p.is_dir() and p.name not in used):
        if path.name.rsplit("-", 1)[0] in kinds:
            kept.append(KeptState(path, ORPHAN_REASON))
    return remove, kept


ORPHAN_REASON = (
    "keyed by kind and params, not by name: no configured system uses it, but membench cannot tell "
    "which name made it (remove it by hand if unwanted)"
)


def checkpoint_kinds(store: ResultStore, systems: Iterable[str]) -> set[str]:
    """The system kinds recorded in the checkpoints of ``systems`` (pipeline/memory/checkpoint.py metadata)."""
    from pipeline.memory.checkpoint import load

    kinds: set[str] = set()
    for folder in checkpoint_dirs(store, systems):
        for path in sorted(folder.glob("*/*.parquet"))[:1]:
            saved = load(path)
            if saved is not None:
                kinds.add(saved.state.system_kind)
    return kinds


def plan_forget(store: ResultStore, cfg: BenchmarkConfig, systems: Iterable[str]) -> ForgetPlan:
    """What forgetting ``systems`` would remove from ``cfg``'s results folder (reads only)."""
    names = set(systems)
    stages = [h for h in (stage_hits(store, s, names) for s in STAGE_TABLES) if h is not None]
    checkpoints = checkpoint_dirs(store, names)
    products, kept = plan_products(store, cfg, names)
    configured = {s.name for s in cfg.memory_systems}
    found = {n for h in stages for n in h.systems} | {p.name for p in checkpoints}
    return ForgetPlan(
        systems=tuple(sorted(names)),
        still_configured=tuple(sorted(names & configured)),
        stages=tuple(stages),
        checkpoints=tuple(checkpoints),
        product_dirs=tuple(products),
        kept=tuple(kept),
        without_rows=tuple(sorted(names - found)),
        derived=tuple(derived_hits(store, names)),
    )


def forget_rows(store: ResultStore, stage: str, keys: Iterable[str], systems: set[str]) -> None:
    """Rewrite each of ``keys``'s ``stage`` file without the rows of ``systems`` (atomic per file).

    The other rows keep every value and the file's schema; a file left empty is removed. The status
    index is updated in the same pass and saved at the end (a kill before that only costs reads).
    """
    index = StageIndex(store.parquet_root, stage)
    for key in keys:
        path = store.partition_path(stage, key)
        try:
            table = pq.read_table(path)
        except FileNotFoundError:
            index.drop(key)
            continue
        keep = pa.array([row_system(u, stage) not in systems for u in table.column("unit").to_pylist()])
        kept = table.filter(keep)
        if kept.num_rows == table.num_rows:
            continue
        if kept.num_rows == 0:
            path.unlink(missing_ok=True)
            index.drop(key)
        else:
            store.write_partition(stage, key, kept)
            index.put(key, kept)
    index.save()


def remove_dir(store: ResultStore, path: Path) -> None:
    """Rename ``path`` into the results folder's trash (atomic: no reader sees half of it), then delete it."""
    trash = store.root / TRASH_DIR
    trash.mkdir(exist_ok=True)
    target = trash / uuid.uuid4().hex
    os.replace(path, target)
    shutil.rmtree(target, ignore_errors=True)


def empty_trash(store: ResultStore) -> None:
    """Delete what an earlier, killed ``forget`` left in the trash."""
    trash = store.root / TRASH_DIR
    if trash.is_dir():
        shutil.rmtree(trash, ignore_errors=True)


def apply_plan(store: ResultStore, plan: ForgetPlan) -> list[str]:
    """Remove what ``plan`` lists, then refresh the catalog. Returns the catalog's views.

    Order: stage rows first (what makes a question failed), then checkpoints and product state; a
    kill at any point leaves whole files only, and running the command again finishes the job.
    """
    empty_trash(store)
    systems = set(plan.systems)
    for hits in plan.stages:
        forget_rows(store, hits.stage, hits.keys, systems)
    forget_derived(store, (p for p, _ in plan.derived), systems)
    for path in (*plan.checkpoints, *plan.product_dirs):
        if path.exists():
            remove_dir(store, path)
    empty_trash(store)
    return store.refresh_catalog()
