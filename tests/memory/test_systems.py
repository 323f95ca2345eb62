"""Memory systems on a hand-made haystack with the real MiniLM encoder (offline)."""

from __future__ import annotations

import pytest

from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig
from pipeline.core.tokens import count_tokens
from pipeline.kinds.memory import MEMORY_SYSTEMS
from pipeline.kinds.resolve import resolve_config
from pipeline.memory.base import Encoder, MemoryDeps, MemorySystem
from pipeline.memory.context import session_header, truncate_to_tokens
from pipeline.memory.full_context import FullContextMemory
from pipeline.memory.hybrid import HybridMemory
from pipeline.memory.hybrid_params import HybridParams
from pipeline.memory.params import MemoryConfigError
from pipeline.memory.rag import RagMemory
from pipeline.memory.summaries import NO_SUMMARIES, MissingSummaryError, SummariesMemory
from pipeline.memory.systems import SystemSpec, filter_roles, system_specs
from pipeline.util.registry import Registry, RegistryError
from tests.support.memory import HAYSTACK, build_haystack, encoder, question


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return encoder(tmp_path_factory.mktemp("embedding-cache"))


def ingest_all(system: MemorySystem, with_summaries: bool = True, roles: tuple[str, ...] | None = None) -> int:
    n = 0
    for hs in filter_roles(build_haystack(with_summaries), roles):
        n += len(system.ingest_session(HAYSTACK, hs))
    return n


# ---- registry ------------------------------------------------------------------------------------
def test_registry_lists_the_simple_systems() -> None:
    assert {"full_context", "rag", "summaries", "notes"} <= set(MEMORY_SYSTEMS.names())


def test_registry_unknown_kind_is_loud() -> None:
    with pytest.raises(RegistryError, match=r"unknown memory system 'ragg'; known: .*rag"):
        MEMORY_SYSTEMS.get("ragg")


def test_registry_duplicate_name_is_loud() -> None:
    with pytest.raises(RegistryError, match="duplicate memory system name 'rag'"):
        MEMORY_SYSTEMS.add("rag", RagMemory)
    fresh: Registry[type] = Registry("memory system")
    fresh.add("x", RagMemory)
    with pytest.raises(RegistryError):
        fresh.register("x")(FullContextMemory)


def test_unknown_param_is_a_config_error(enc: Encoder) -> None:
    with pytest.raises(MemoryConfigError, match="topk"):
        RagMemory({"topk": 3}, MemoryDeps(enc))


def test_rag_without_encoder_is_a_config_error() -> None:
    with pytest.raises(MemoryConfigError, match="needs an embedding encoder"):
        RagMemory({}, MemoryDeps(None))


# ---- full_context ----------------------------------------------------------------------------------
def test_full_context_keeps_everything_in_time_order_with_dates() -> None:
    m = FullContextMemory({"token_budget": None}, MemoryDeps(None))
    assert ingest_all(m) == 11
    r = m.retrieve(question("anything"))
    assert r.trimmed_units == 0
    assert [u.unit_id for u in r.units][:2] == ["s0:0", "s0:1"] and len(r.units) == 11
    assert r.context.startswith("[Session 1 | 2023-05-08 (Mon) 13:56]\nAlice: I adopted a golden retriever")
    assert "[Session 3 | 2023-07-19 (Wed) 18:30]" in r.context
    assert r.context_tokens == count_tokens(r.context)


# hand-checked: header "[Session 3 | 2023-07-19 (Wed) 18:30]" = 16 tokens,
# "Bob: I cooked a big pot of vegetable curry for my neighbours." = 14 tokens (Bob : I ... neighbours .)
@pytest.mark.parametrize(
    ("budget", "kept_ids", "trimmed", "tokens"),
    [
        (30, ["s2:3"], 10, 30),
        (28, ["s2:3"], 10, 28),  # nothing fits whole: the newest turn is cut to 28 - 16 = 12 tokens
        (200, None, 0, None),
    ],
)
def test_full_context_trims_oldest_first(
    budget: int, kept_ids: list[str] | None, trimmed: int, tokens: int | None
) -> None:
    m = FullContextMemory({"token_budget": budget}, MemoryDeps(None))
    ingest_all(m)
    r = m.retrieve(question("anything"))
    assert r.trimmed_units == trimmed
    assert r.notes["trimmed_units"] == trimmed
    assert r.context_tokens == count_tokens(r.context) <= budget
    if kept_ids is not None:
        assert [u.unit_id for u in r.units] == kept_ids
    if tokens is not None:
        assert r.context_tokens == tokens
    if budget == 28:
        assert r.notes["truncated_unit"] is True
        assert r.context.endswith("\nBob: I cooked a big pot of vegetable curry for my")
    else:
        assert r.notes["truncated_unit"] is False


def test_full_context_trim_drops_a_prefix_only() -> None:
    """Kept units are the newest suffix, and the next-older unit would not have fit."""
    full = FullContextMemory({"token_budget": None}, MemoryDeps(None))
    ingest_all(full)
    everything = [u.unit_id for u in full.retrieve(question("x")).units]
    m = FullContextMemory({"token_budget": 90}, MemoryDeps(None))
    ingest_all(m)
    r = m.retrieve(question("x"))
    kept = [u.unit_id for u in r.units]
    assert kept == everything[len(everything) - len(kept) :]
    assert r.trimmed_units == len(everything) - len(kept) > 0
    older = m.units[len(everything) - len(kept) - 1]
    extra = count_tokens(older.text) + (count_tokens(session_header(older)) if older.session_key not in {
        u.session_key for u in r.units} else 0)  # fmt: skip
    assert r.context_tokens + extra > 90


def test_truncate_to_tokens() -> None:
    assert truncate_to_tokens("Bob: I cooked a pot.", 3) == "Bob: I"
    assert truncate_to_tokens("a b", 5) == "a b"
    assert truncate_to_tokens("a b", 0) == ""


# ---- rag ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        ("What is the name of Alice's dog?", "s0:0"),
        ("Which city in Portugal did Alice visit?", "s1:0"),
        ("What musical instrument is Alice learning?", "s2:0"),
        ("Which race is Bob preparing for?", "s0:3"),
    ],
)
def test_rag_retrieves_the_evidence_turn_for_a_paraphrase(enc: Encoder, text: str, evidence: str) -> None:
    m = RagMemory({"top_k": 3}, MemoryDeps(enc))
    ingest_all(m)
    r = m.retrieve(question(text))
    assert r.units[0].unit_id == evidence
    assert [u.rank for u in r.units] == [1, 2, 3]
    assert r.units[0].semantic is not None and r.units[0].semantic > r.units[1].semantic  # type: ignore[operator]
    assert r.units[0].turn_ids == (evidence,)


def test_rag_context_time_order_with_session_dates(enc: Encoder) -> None:
    m = RagMemory({"top_k": 2}, MemoryDeps(enc))
    ingest_all(m)
    r = m.retrieve(question("What musical instrument is Alice learning?"))
    assert r.context.splitlines()[0] == "[Session 3 | 2023-07-19 (Wed) 18:30]"
    assert r.context.index("cello lessons") < r.context.index("string instruments")  # s2:0 before s2:1


def test_rag_rank_order_prefixes_each_unit(enc: Encoder) -> None:
    m = RagMemory({"top_k": 2, "order": "rank"}, MemoryDeps(enc))
    ingest_all(m)
    r = m.retrieve(question("Which city in Portugal did Alice visit?"))
    first = r.context.splitlines()[0]
    assert first == "[2023-06-02 (Fri) 09:15 | session 2] Alice: I just came back from a week in Lisbon, Portugal."


def test_rag_budget_drops_lowest_ranked(enc: Encoder) -> None:
    m = RagMemory({"top_k": 5, "order": "rank", "token_budget": 40}, MemoryDeps(enc))
    ingest_all(m)
    r = m.retrieve(question("What is the name of Alice's dog?"))
    assert len(r.units) == 5  # the ranking keeps every hit (retrieval metrics need it)
    assert r.trimmed_units >= 3
    assert "Biscuit" in r.context and r.context_tokens <= 40


def test_rag_session_granularity_returns_sessions(enc: Encoder) -> None:
    m = RagMemory({"granularity": "session", "top_k": 2, "chunk_tokens": 25}, MemoryDeps(enc))
    assert ingest_all(m) > 3  # several chunks per session at 25 tokens
    r = m.retrieve(question("Which city did Alice travel to?"))
    top = r.units[0]
    assert (top.unit_id, top.session_key) == ("s1", "s1")
    assert top.turn_ids == ("s1:0", "s1:1", "s1:2")
    assert len(r.units) == 2 and len({u.session_key for u in r.units}) == 2


def test_index_roles_user_only(enc: Encoder) -> None:
    m = RagMemory({"top_k": 20}, MemoryDeps(enc))
    assert ingest_all(m, roles=("user",)) == 6
    r = m.retrieve(question("Which race is Bob preparing for?"))
    assert all(u.text.startswith("Alice:") for u in r.units)


# ---- summaries ---------------------------------------------------------------------------------------
def test_summaries_retrieve_the_session(enc: Encoder) -> None:
    m = SummariesMemory({"top_k": 1}, MemoryDeps(enc))
    assert ingest_all(m) == 3
    r = m.retrieve(question("Which instrument does Alice play?"))
    assert [(u.unit_id, u.session_key, u.turn_ids) for u in r.units] == [("s2#summary", "s2", ())]
    assert r.context == "[Session 3 | 2023-07-19 (Wed) 18:30]\n" + build_haystack()[2].session.summary


def test_summaries_fail_clearly_without_summaries(enc: Encoder) -> None:
    m = SummariesMemory({}, MemoryDeps(enc))
    with pytest.raises(MissingSummaryError, match=f"{NO_SUMMARIES}: session 'session_1'"):
        ingest_all(m, with_summaries=False)


@pytest.mark.parametrize(
    ("params", "same_as_default"),
    [
        ({}, True),
        ({"rrf_k": HybridParams().rrf_k}, True),  # spelling out a default changes nothing
        ({"rrf_k": HybridParams().rrf_k + 2}, False),
        ({"channels": {"graph": False}}, False),
    ],
)
def test_unit_hash_covers_resolved_params(params: dict, same_as_default: bool) -> None:
    """The hash is of the params the system runs with, so changing a code default recomputes."""
    ds = DatasetConfig(name="d", loader="locomo", path="x.json")

    def spec_of(p: dict) -> SystemSpec:
        bench = BenchmarkConfig(datasets=(ds,), memory_systems=(ComponentConfig(name="h", kind="hybrid", params=p),))
        [spec] = system_specs(resolve_config(bench), "d")
        return spec

    assert (spec_of(params).unit_hash == spec_of({}).unit_hash) is same_as_default
    assert spec_of(params).entry.params_json()["top_k"] == 20  # code defaults are part of the hashed params


def test_unit_hash_changes_with_the_system_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """A code change that alters results bumps ``version``; stored rows of the old code are redone."""
    ds = DatasetConfig(name="d", loader="locomo", path="x.json")
    bench = BenchmarkConfig(datasets=(ds,), memory_systems=(ComponentConfig(name="h", kind="hybrid"),))
    before = system_specs(resolve_config(bench), "d")[0].unit_hash
    monkeypatch.setattr(HybridMemory, "version", HybridMemory.version + 1)
    assert system_specs(resolve_config(bench), "d")[0].unit_hash != before
