"""Work over a whole results folder that concurrent runs ask for, done once per burst of requests.

Why: the catalog rebuild and the report refresh read every result of the folder. K concurrent runs
(a backfill split into runs) each asked for both after their stages and at their end, and on a
small machine the K copies queued behind each other (K = 4 runs were slower than one run doing the
same questions). Each copy only needs *a* rebuild that started after its own writes were done.

How (no clocks, so it holds across processes and hosts sharing the folder):

- a requester finishes writing, then takes a ticket (a counter in ``.<name>.tickets``, under its
  own lock);
- it then waits for the work lock. The process holding it notes the last ticket issued before it
  starts (every such requester had finished writing) and, once done, records that number as
  covered;
- a requester whose ticket is covered when it gets the lock skips the work: a rebuild that saw its
  writes finished meanwhile. So N requesters that arrive while one rebuild runs cost one more
  rebuild, not N.

The counts of work done and skipped are kept in the folder (``.<name>.coalesce``), so a benchmark
or a test can say how many rebuilds K runs caused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pipeline.util.filelock import file_lock

T = TypeVar("T")


@dataclass(frozen=True)
class CoalesceCounts:
    """How often the work was done and how often a requester found it already done for it."""

    done: int = 0
    skipped: int = 0


@dataclass(frozen=True)
class Coalescer:
    """Coalesced work named ``name`` over the folder ``root`` (see the module docstring)."""

    root: Path
    name: str

    @property
    def _tickets(self) -> Path:
        return self.root / f".{self.name}.tickets"

    @property
    def _lock(self) -> Path:
        return self.root / f".{self.name}.lock"

    @property
    def _state(self) -> Path:
        return self.root / f".{self.name}.coalesce"

    def ticket(self) -> int:
        """A new ticket: call it only once the writes this request must see are finished."""
        with file_lock(self._tickets):
            n = _read_int(self._tickets) + 1
            self._tickets.write_text(str(n))
        return n

    def _issued(self) -> int:
        with file_lock(self._tickets):
            return _read_int(self._tickets)

    def counts(self) -> CoalesceCounts:
        """Work done and skipped in this folder so far (all processes)."""
        state = self._read_state()
        return CoalesceCounts(int(state.get("done", 0)), int(state.get("skipped", 0)))

    def _read_state(self) -> dict[str, int]:
        try:
            state = json.loads(self._state.read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def run(self, work: Callable[[], T], reuse: Callable[[], T | None]) -> T:
        """``work()``, unless a run of it that started after this request's writes has finished.

        ``reuse()`` gives that finished run's result (None: not reusable, e.g. its output was
        changed since; then the work is done again).
        """
        self.root.mkdir(parents=True, exist_ok=True)
        mine = self.ticket()
        with file_lock(self._lock):
            state = self._read_state()
            if int(state.get("covered", 0)) >= mine:
                kept = reuse()
                if kept is not None:
                    state["skipped"] = int(state.get("skipped", 0)) + 1
                    self._state.write_text(json.dumps(state))
                    return kept
            covers = self._issued()  # every requester up to here finished writing before its ticket
            result = work()
            state["covered"] = max(covers, int(state.get("covered", 0)))
            state["done"] = int(state.get("done", 0)) + 1
            self._state.write_text(json.dumps(state))
            return result


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0
