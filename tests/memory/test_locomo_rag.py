"""``locomo_rag``: LoCoMo's three RAG databases (dialogs, observations, session summaries).

A hand-made conversation (tests/support/memory.py) with observations added in LoCoMo's shape;
the real MiniLM encoder through the pipeline's cached encoder. Checked: what an entry is in each
mode, the official context string (``<date>: <entry>``, newline or blank-line joined, top 5),
the ranking (inner product, best first), the ids LoCoMo's recall reads, restore, and that the
LoCoMo loader carries the shipped observations.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pipeline.datasets.locomo import observation_json
from pipeline.kinds.memory import MEMORY_SYSTEMS
from pipeline.memory.base import MemoryDeps
from pipeline.memory.locomo_rag import KIND, LocomoRagMemory, observation_ids
from pipeline.memory.params import MemoryConfigError
from pipeline.metrics.locomo_evidence import locomo_evidence_recall_official
from pipeline.store.corpus import HaystackSession
from tests.support.memory import HAYSTACK, build_haystack, encoder, question

OBSERVATIONS = [
    {
        "Alice": [["Alice adopted a golden retriever puppy named Biscuit.", "D1:1"],
                  ["Biscuit chews Alice's shoes.", "D1:3, D1:99"]],
        "Bob": [["Bob trains for the Boston marathon.", "D1:4"]],
    },
    {"Alice": [["Alice visited Lisbon for a week and rode tram 28.", ["D2:1", "D2:3"]]]},
    {"Alice": [["Alice takes cello lessons on Tuesday evenings.", "D3:1"]]},
]  # fmt: skip


def haystack() -> list[HaystackSession]:
    return [HaystackSession(hs.position, replace(hs.session, observations=observation_json(obs)), hs.turns)
            for hs, obs in zip(build_haystack(), OBSERVATIONS, strict=True)]  # fmt: skip


@pytest.fixture(scope="module")
def deps(tmp_path_factory: pytest.TempPathFactory) -> MemoryDeps:
    return MemoryDeps(encoder=encoder(tmp_path_factory.mktemp("cache")))


def _memory(deps: MemoryDeps, **params: object) -> LocomoRagMemory:
    memory = LocomoRagMemory(params, deps)
    for hs in haystack():
        memory.ingest_session(HAYSTACK, hs)
    return memory


def test_observation_ids_as_the_official_code_expands_them() -> None:
    assert observation_ids("D1:3") == ["D1:3"]
    assert observation_ids("D1:3, D1:99") == ["D1:3", "D1:99"]
    assert observation_ids(["D2:1", "D2:3"]) == ["D2:1", "D2:3"]


def test_dialog_database_context_and_ranking(deps: MemoryDeps) -> None:
    memory = _memory(deps)
    assert len(memory.units) == 11 and memory.units[1].text == 'Bob said, "Congratulations! Puppies are a lot of work."'
    q = question("What is the name of Alice's puppy?")
    result = memory.retrieve(q)
    assert len(result.units) == 5 and result.units[0].unit_id == "s0:0"
    vecs = deps.encoder.encode([u.text for u in memory.units])  # type: ignore[union-attr]
    scores = vecs @ deps.encoder.encode([q.question])[0]  # type: ignore[union-attr]
    assert [u.unit_id for u in result.units] == [memory.units[i].unit_id for i in np.argsort(scores)[::-1][:5]]
    date = build_haystack()[0].session.datetime_raw
    assert (
        result.context.split("\n")[0]
        == f'{date}: Alice said, "I adopted a golden retriever puppy last weekend, his name is Biscuit."'
    )
    assert len(result.context.split("\n")) == 5 and result.trimmed_units == 0
    context_ids = [
        f"D{int(t.split(':')[0][1:]) + 1}:{int(t.split(':')[1]) + 1}" for u in result.units for t in u.turn_ids
    ]
    assert locomo_evidence_recall_official(["D1:1"], context_ids) == 1.0


def test_observation_database_cites_turns(deps: MemoryDeps) -> None:
    memory = _memory(deps, mode="observation", top_k=2)
    assert [u.text for u in memory.units][:2] == ["Alice adopted a golden retriever puppy named Biscuit.",
                                                 "Biscuit chews Alice's shoes."]  # fmt: skip
    by_id = {u.unit_id: u.turn_ids for u in memory.units}
    assert by_id["s0#obs1"] == ("s0:2",)  # D1:99 names no turn of the conversation: not carried
    assert by_id["s1#obs0"] == ("s1:0", "s1:2")
    result = memory.retrieve(question("Which musical instrument is Alice learning?"))
    assert result.units[0].unit_id == "s2#obs0" and len(result.units) == 2


def test_summary_database_gives_session_hits(deps: MemoryDeps) -> None:
    memory = _memory(deps, mode="summary")
    assert [u.unit_id for u in memory.units] == ["s0#summary", "s1#summary", "s2#summary"]
    result = memory.retrieve(question("Where did Alice travel?"))
    assert result.units[0].session_key == "s1" and result.units[0].turn_ids == ()
    assert "\n\n" in result.context and len(result.units) == 3  # top 5 of 3 entries
    sessions = [f"S{int(u.session_key[1:]) + 1}" for u in result.units]
    assert locomo_evidence_recall_official(["D2:3", "D9:1"], sessions) == 0.5


def test_restored_memory_gives_the_same_context(deps: MemoryDeps) -> None:
    memory = _memory(deps)
    checkpoint: list = []
    for hs in haystack():
        checkpoint += LocomoRagMemory({}, deps).ingest_session(HAYSTACK, hs)
    again = LocomoRagMemory({}, deps)
    again.restore(checkpoint)
    q = question("What is the name of Alice's puppy?")
    assert again.retrieve(q).context == memory.retrieve(q).context


def test_registered_and_strict(deps: MemoryDeps) -> None:
    assert MEMORY_SYSTEMS.get(KIND) is LocomoRagMemory
    with pytest.raises(MemoryConfigError, match="mode"):
        LocomoRagMemory({"mode": "events"}, deps)
    with pytest.raises(MemoryConfigError, match="encoder"):
        LocomoRagMemory({}, MemoryDeps(encoder=None))


def test_locomo_loader_keeps_the_shipped_observations(shared_datasets: Path) -> None:
    """Every observation of locomo10.json reaches the sessions table (2,541 facts, 10 conversations)."""
    from pipeline.datasets.locomo import load_locomo

    sessions = {s.session.session_key: s.session for rec in load_locomo(shared_datasets / "locomo10.json", "loc")
                for s in rec.sessions}  # fmt: skip
    facts = sum(len(json.loads(s.observations)) for s in sessions.values() if s.observations)
    raw = json.loads((shared_datasets / "locomo10.json").read_text())
    expected = sum(len(f) for c in raw for obs in c["observation"].values() for f in obs.values())
    assert facts == expected == 2541
