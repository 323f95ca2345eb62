"""Hybrid rankings must not depend on the process's string-hash seed (PYTHONHASHSEED).

Why a subprocess test: set and frozenset iteration order of strings changes with the hash seed,
which is fixed per process; only separate interpreters with different seeds reveal an ordering
that leaks from a set (the original bug: ties between equally frequent entities of a question
were broken in hash order, so the graph seeds, and with them the ranking, changed per process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pipeline.memory.hybrid_index import HybridState
from pipeline.memory.hybrid_params import HybridParams
from tests.support.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT

# A haystack where many question entities occur equally often: each name below is in exactly
# two turns, so every tie between them must be broken the same way in every process.
_SCRIPT = r"""
import datetime as dt, json
from pipeline.store.corpus import HaystackSession
from pipeline.memory.base import MemoryDeps
from pipeline.memory.hybrid import HybridMemory
from pipeline.core.records import QuestionRow, SessionRow, TurnRow

NAMES = ["Alma", "Boris", "Cedric", "Dagny", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas"]
sessions = []
for i, name in enumerate(NAMES):
    other = NAMES[(i + 1) % len(NAMES)]
    texts = [f"I had lunch with {name} and {other} today.", f"{name} talked about the weather.",
             "Nothing much else happened.", f"We walked past a bakery near {other}'s office."]
    key = f"s{i}"
    turns = tuple(TurnRow("d", key, f"{key}:{p}", p, "user", "user", t, False, None) for p, t in enumerate(texts))
    when = dt.datetime(2023, 1, 1 + i, 12, 0)
    sessions.append(HaystackSession(i, SessionRow("d", key, key, None, when, None, len(turns)), turns))
params = {"channels": {"semantic": False, "bm25": True, "graph": True, "temporal": True},
          "graph_seeds": 2, "entity_max_df": 0.5, "top_k": 40}
mem = HybridMemory(params, MemoryDeps(encoder=None))
for hs in sessions:
    mem.ingest_session("h", hs)
out = []
for text in ["What did " + " and ".join(NAMES) + " do?", "Who walked past the bakery with Ines or Boris?"]:
    q = QuestionRow("d", "q", "d__q", 0, "x", "x", text, None, None, None, None, None,
                    dt.datetime(2023, 2, 1), False, "h")
    r = mem.retrieve(q)
    out.append([[u.unit_id, u.graph, u.bm25, u.fused] for u in r.units] + [r.notes.get("graph_seeds")])
print(json.dumps(out))
"""


def _ranking_under(seed: str) -> list[list[list[object]]]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_hybrid_ranking_is_identical_under_different_hash_seeds() -> None:
    rankings = {seed: _ranking_under(seed) for seed in ("1", "2", "3", "4")}
    first = rankings["1"]
    assert all(len(r) > 1 for r in first)
    for seed, ranking in rankings.items():
        assert ranking == first, f"PYTHONHASHSEED={seed} ranks differently from PYTHONHASHSEED=1"


def test_entity_ties_are_broken_by_entity_name() -> None:
    state = HybridState(HybridParams.model_validate({"entity_max_df": 1.0}), None)
    state.postings["zeta"] = [5, 6]
    state.postings["alpha"] = [7, 8]
    state.postings["mid"] = [1]
    assert state.entity_units(frozenset({"zeta", "alpha", "mid"})) == [1, 7, 8, 5, 6]
