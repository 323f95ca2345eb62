"""On-disk state of a product memory per (system, haystack): a live directory plus per-session snapshots.

Why snapshots: a product's store (mem0's vector index and its message history, a LangGraph store,
a Kuzu database) is changed in place by the library, and a ``kill -9`` in the middle of a session
leaves it half-written. membench's ingestion driver resumes from its own checkpoint, which counts
the sessions whose ``ingest_session`` returned (one ``product_session`` marker unit each). After each
session the live directory is copied to ``snap/<k>`` (k = sessions ingested so far) and ``STATE``
records ``{"k": k, "clean": true}``; at the start of a session ``STATE`` is marked dirty. On
resume with k markers, the live directory is trusted only when ``STATE`` says clean at k;
otherwise it is replaced by ``snap/<k>`` (the exact state after session k, the history the
product's prompts read included). Only the last two snapshots are kept (the driver's checkpoint
may lag the last one by one session when the kill lands between the two writes).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

PRODUCTS_SUBDIR = "products"  # <state dir>/products/<kind>-<params hash>: one folder per product instance
STATE_FILE = "STATE"
LIVE = "live"
SNAPSHOTS = "snap"
KEEP_SNAPSHOTS = 2


class StateUntrusted(RuntimeError):
    """The live state does not match the checkpoint and no snapshot can replace it."""


@dataclass(frozen=True)
class StateDir:
    """The directory of one product memory (system configuration x haystack)."""

    root: Path

    @property
    def live(self) -> Path:
        return self.root / LIVE

    def snapshot(self, k: int) -> Path:
        return self.root / SNAPSHOTS / str(k)

    def state(self) -> tuple[int, bool] | None:
        """(sessions in the live directory, whether it is clean), or None when unknown."""
        try:
            data = json.loads((self.root / STATE_FILE).read_text())
            return int(data["k"]), bool(data["clean"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write_state(self, k: int, clean: bool) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{STATE_FILE}.tmp"
        tmp.write_text(json.dumps({"k": k, "clean": clean}))
        os.replace(tmp, self.root / STATE_FILE)

    def start_fresh(self) -> None:
        """Empty live directory, no snapshots: the start of an ingestion from session 0."""
        for sub in (LIVE, SNAPSHOTS):
            shutil.rmtree(self.root / sub, ignore_errors=True)
        self.live.mkdir(parents=True)
        self._write_state(0, True)

    def begin_session(self, k: int) -> None:
        """The live directory is about to change (session k+1 starts): untrusted until ``commit``."""
        self._write_state(k, False)

    def commit(self, k: int) -> None:
        """Session k is done: snapshot the live directory, mark it clean, prune old snapshots."""
        target = self.snapshot(k)
        tmp = target.with_name(f".{k}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(self.live, tmp)
        os.replace(tmp, target)
        self._write_state(k, True)
        for old in (self.root / SNAPSHOTS).iterdir():
            if old.name.isdigit() and int(old.name) <= k - KEEP_SNAPSHOTS:
                shutil.rmtree(old, ignore_errors=True)

    def settle(self, k: int) -> str:
        """Make the live directory the state after session ``k``; returns what was done.

        ``trusted``: live is clean at k. ``snapshot``: live replaced by snap/k. ``fresh``: k == 0.
        Raises StateUntrusted when live cannot be trusted and snap/k is missing.
        """
        if self.state() == (k, True) and self.live.is_dir():
            return "trusted"
        if k == 0:
            self.start_fresh()
            return "fresh"
        snap = self.snapshot(k)
        if not snap.is_dir():
            raise StateUntrusted(
                f"{self.root}: the product state is not the state after session {k} "
                f"(STATE={self.state()}) and snapshot {k} is missing"
            )
        shutil.rmtree(self.live, ignore_errors=True)
        shutil.copytree(snap, self.live)
        self._write_state(k, True)
        return "snapshot"
