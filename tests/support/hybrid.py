"""A small hand-written haystack for the ``hybrid`` memory system's tests, questions about it, and
a memory built on it.

Each fact sits in one known turn (BIKE, BREAD, ... name them), so which turn a channel should rank
first has a hand-checked answer (tests/memory/test_hybrid.py, tests/memory/test_hybrid_rerank.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import numpy as np

from pipeline.core.records import QuestionRow, SessionRow, TurnRow
from pipeline.memory.base import Encoder, MemoryDeps, RetrievalResult
from pipeline.memory.hybrid import HybridMemory
from pipeline.store.corpus import HaystackSession

HAY = "hybrid-toy"
# (date, [(role, text)]); turn ids are "h<session>:<position>"
SESSIONS: list[tuple[dt.datetime, list[tuple[str, str]]]] = [
    (
        dt.datetime(2023, 3, 1, 9, 0),
        [
            ("user", "My sister Marguerite just moved to Kraków for a new job at a bakery."),
            ("assistant", "That's exciting! The old town there is lovely."),
            ("user", "I adopted a cat from the shelter and named her Pickles."),
        ],
    ),
    (
        dt.datetime(2023, 4, 10, 18, 30),
        [
            ("user", "Marguerite sent me a photo of the Wawel castle at sunset."),
            ("user", "I'm training for a half marathon in October."),
            ("assistant", "Great, build your weekly mileage gradually."),
        ],
    ),
    (
        dt.datetime(2023, 5, 28, 8, 0),
        [
            ("user", "I bought a new road bike, a blue Trek Domane, for my commute."),
            ("assistant", "Nice choice, it is a comfortable endurance frame."),
            ("user", "Pickles knocked my coffee mug off the desk this morning."),
        ],
    ),
    (
        dt.datetime(2023, 5, 29, 20, 0),
        [("user", "I baked sourdough bread for the first time, the crust was perfect.")],
    ),
]
BIKE, BREAD, SISTER_JOB, CASTLE, CAT = "h2:0", "h3:0", "h0:0", "h1:0", "h0:2"


def haystack() -> list[HaystackSession]:
    """SESSIONS as the haystack's sessions h0..h3 (dataset ``toy``)."""
    out = []
    for i, (when, turns) in enumerate(SESSIONS):
        key = f"h{i}"
        rows = tuple(
            TurnRow("toy", key, f"{key}:{p}", p, role, role, text, False, None) for p, (role, text) in enumerate(turns)
        )
        out.append(HaystackSession(i, SessionRow("toy", key, f"s{i}", None, when, None, len(rows)), rows))
    return out


def ask(text: str, date: dt.datetime | None = dt.datetime(2023, 5, 30, 12, 0)) -> QuestionRow:
    """Question ``text`` on haystack HAY, asked on ``date``."""
    return QuestionRow(
        "toy", "q", "toy__q", 0, "x", "x", text, None, None, None, None, None, date, False, HAY
    )  # fmt: skip


class CountingEncoder:
    """The pipeline's cached MiniLM encoder, counting calls and texts (index built once?)."""

    def __init__(self, inner: Encoder) -> None:
        self.inner, self.model_name = inner, inner.model_name
        self.calls: list[int] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return self.inner.encode(texts)


def build(encoder: CountingEncoder | None, **params: object) -> HybridMemory:
    """A hybrid memory with ``params`` that has ingested the whole haystack."""
    mem = HybridMemory(dict(params), MemoryDeps(encoder=encoder))
    for hs in haystack():
        mem.ingest_session(HAY, hs)
    return mem


def ids(result: RetrievalResult) -> list[str]:
    """The unit ids of ``result``, best first."""
    return [u.unit_id for u in result.units]
