"""The ``hybrid`` memory system end to end on a small hand-written haystack (real MiniLM encoder).

Every expectation here was checked by hand against the haystack (tests/support/hybrid.py): which
turn holds which fact, which words it shares with each question, which entities link turns.
"""

from __future__ import annotations

import datetime as dt

import pytest

from pipeline.core.records import SessionRow, TurnRow
from pipeline.core.tokens import count_tokens
from pipeline.kinds.memory import MEMORY_SYSTEMS
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.hybrid import RERANK_SKIPPED, HybridMemory
from pipeline.memory.params import MemoryConfigError
from pipeline.store.corpus import HaystackSession
from tests.support.hybrid import BIKE, BREAD, CASTLE, CAT, HAY, SISTER_JOB, CountingEncoder, ask, build, haystack, ids
from tests.support.memory import encoder as pipeline_encoder


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return pipeline_encoder(tmp_path_factory.mktemp("emb-cache"))


@pytest.fixture
def encoder(minilm: Encoder) -> CountingEncoder:
    return CountingEncoder(minilm)


ONLY = {"semantic": False, "bm25": False, "graph": False, "temporal": False}


def only(channel: str) -> dict[str, bool]:
    return {**ONLY, channel: True}


# ---- protocol -------------------------------------------------------------------------------
def test_registered_as_hybrid() -> None:
    assert MEMORY_SYSTEMS.get("hybrid") is HybridMemory


def test_ingest_returns_turn_units_and_restore_gives_same_retrieval(encoder: CountingEncoder) -> None:
    mem = HybridMemory({}, MemoryDeps(encoder=encoder))
    units = []
    for hs in haystack():
        added = mem.ingest_session(HAY, hs)
        assert [u.unit_id for u in added] == [t.turn_id for t in hs.turns]
        units.extend(added)
    assert {u.kind for u in units} == {"turn"}
    restored = HybridMemory({}, MemoryDeps(encoder=encoder))
    restored.restore(units)
    q = ask("Where did my sister move?")
    a, b = mem.retrieve(q), restored.retrieve(q)
    assert (a.units, a.context, a.trimmed_units) == (b.units, b.context, b.trimmed_units)


def test_indexes_built_once_and_rebuilt_after_ingestion(encoder: CountingEncoder) -> None:
    mem = build(encoder)
    mem.retrieve(ask("What is my cat called?"))
    built = mem.state.index()
    mem.retrieve(ask("What did I bake?"))
    assert mem.state.index() is built
    assert encoder.calls == [10, 1, 1]  # 10 unit texts once, then one query per question
    extra = HaystackSession(
        4,
        SessionRow("toy", "h4", "s4", None, dt.datetime(2023, 5, 30, 8, 0), None, 1),
        (TurnRow("toy", "h4", "h4:0", 0, "user", "user", "My bike got a flat tyre.", False, None),),
    )
    mem.ingest_session(HAY, extra)
    result = mem.retrieve(ask("What happened to my bike?"))
    assert mem.state.index() is not built
    assert encoder.calls[3] == 1  # only the new unit is embedded
    assert "h4:0" in ids(result)[:2]


def test_bad_params_fail_loudly(encoder: CountingEncoder) -> None:
    with pytest.raises(MemoryConfigError, match="topk"):
        HybridMemory({"topk": 5}, MemoryDeps(encoder=encoder))
    with pytest.raises(MemoryConfigError, match="every channel is switched off"):
        HybridMemory({"channels": ONLY}, MemoryDeps(encoder=encoder))
    with pytest.raises(MemoryConfigError, match="no encoder"):
        HybridMemory({}, MemoryDeps(encoder=None))


def test_runs_without_encoder_when_semantic_is_off() -> None:
    mem = build(None, channels={"semantic": False})
    result = mem.retrieve(ask("What bread did I bake?"))
    assert ids(result)[0] == BREAD
    assert result.units[0].semantic is None


# ---- channels -------------------------------------------------------------------------------
def test_channel_switches_change_the_result(encoder: CountingEncoder) -> None:
    q = ask("What did I purchase to ride to work?")  # no word shared with the bike turn
    bm25 = build(encoder, channels=only("bm25")).retrieve(q)
    semantic = build(encoder, channels=only("semantic")).retrieve(q)
    assert ids(bm25) == []  # "purchas", "ride", "work" occur in no turn: BM25 ranks nothing
    assert ids(semantic)[0] == BIKE
    assert {u.bm25 for u in semantic.units} == {None}
    assert semantic.notes["channels"] == {"semantic": 10}


def test_bm25_ranks_the_exact_rare_term_first(encoder: CountingEncoder) -> None:
    result = build(encoder, channels=only("bm25")).retrieve(ask("Trek Domane"))
    assert ids(result) == [BIKE]  # the only turn containing the terms; BM25 ranks nothing else
    assert result.units[0].bm25 is not None and result.units[0].bm25 > 0


def test_temporal_channel_window_and_abstention(encoder: CountingEncoder) -> None:
    mem = build(encoder, channels=only("temporal") | {"semantic": True})
    dated = mem.retrieve(ask("What did I do yesterday?"))  # ref 2023-05-30: window 05-29 +- 1 day
    window = dated.notes["temporal"]
    assert [w["expression"] for w in window] == ["yesterday"]
    in_window = {u.unit_id for u in dated.units if u.temporal}
    assert in_window == {"h2:0", "h2:1", "h2:2", BREAD}
    # recency decay: the 05-29 session scores above the 05-28 one
    score = {u.unit_id: u.temporal for u in dated.units}
    assert score[BREAD] > score[BIKE] > 0
    plain = mem.retrieve(ask("What did I bake?"))
    assert plain.notes["temporal"] == "abstained: no time expression"
    assert {u.temporal for u in plain.units} == {None}


def test_graph_reaches_a_turn_linked_only_by_an_entity(encoder: CountingEncoder) -> None:
    # seed: the sister/job turn (top of semantic + bm25). The castle turn shares only the entity
    # "marguerite" with it; the bread turn shares no entity and is in another session.
    mem = build(encoder, graph_seeds=1, knn=0)
    result = mem.retrieve(ask("What job did my sister get?"))
    graph = {u.unit_id: u.graph for u in result.units}
    assert result.notes["graph_seeds"] == 1
    assert ids(result)[0] == SISTER_JOB
    assert graph[CASTLE] > 0
    assert graph.get(BREAD, 0.0) == 0.0
    adjacency = mem.state.index().adjacency
    assert adjacency is not None
    assert adjacency[0, 3] == 1.0  # h0:0 -- h1:0 via "marguerite" (entity weight 1)
    assert adjacency[0, 1] == 0.5  # h0:0 -- h0:1 neighbouring turns (temporal edge weight 0.5)


def test_graph_alone_is_seeded_by_question_entities(encoder: CountingEncoder) -> None:
    mem = build(encoder, channels=only("graph"), knn=0)
    result = mem.retrieve(ask("What does Pickles like?"))
    # seeds: the two turns naming Pickles (h0:2, h2:2); activation reaches their neighbours
    assert result.notes["graph_seeds"] == 2
    assert ids(result)[:2] == [CAT, "h2:2"]  # seeds 1/1 and 1/2 keep their activation
    assert set(ids(result)) >= {"h0:1", "h2:1"}
    assert set(ids(result)) <= {"h0:0", "h0:1", "h0:2", "h2:0", "h2:1", "h2:2"}


def test_session_granularity_returns_sessions(encoder: CountingEncoder) -> None:
    result = build(encoder, granularity="session").retrieve(ask("What did I bake for the first time?"))
    assert result.units[0].unit_id == "h3"
    assert result.units[0].turn_ids == (BREAD,)
    assert len(ids(result)) == len(set(ids(result))) <= 4
    first_session = next(u for u in result.units if u.unit_id == "h0")
    assert first_session.turn_ids == ("h0:0", "h0:1", "h0:2")


# ---- rerank and budget ----------------------------------------------------------------------
def test_rerank_skipped_without_cross_encoder(encoder: CountingEncoder) -> None:
    result = build(encoder).retrieve(ask("Where did my sister move?"))
    assert result.notes["rerank"] == RERANK_SKIPPED
    assert {u.rerank for u in result.units} == {None}


def test_token_budget_trim_is_counted(encoder: CountingEncoder) -> None:
    full = build(encoder, token_budget=None).retrieve(ask("Tell me about my cat Pickles"))
    cut = build(encoder, token_budget=40).retrieve(ask("Tell me about my cat Pickles"))
    assert ids(full) == ids(cut)  # every ranked unit stays listed (metrics at k need them)
    assert full.trimmed_units == 0 and cut.trimmed_units > 0
    assert cut.context_tokens == count_tokens(cut.context) <= 40 < full.context_tokens
    assert cut.notes["token_budget"] == 40


def test_top_k_limits_units(encoder: CountingEncoder) -> None:
    result = build(encoder, top_k=3).retrieve(ask("Where did my sister move?"))
    assert [u.rank for u in result.units] == [1, 2, 3]


def test_bm25_parameters_reach_the_index() -> None:
    from pipeline.memory.channels.lexical import BM25Index

    q = ask("Which cat did I adopt from the shelter?")
    texts = [f"{t.role}: {t.text}" for hs in haystack() for t in hs.turns]
    for k1, b in [(1.2, 0.75), (2.0, 0.3)]:
        mem = build(None, channels=only("bm25"), bm25_k1=k1, bm25_b=b)
        result = mem.retrieve(q)
        expected = BM25Index(texts, k1=k1, b=b).scores(q.question)
        positions = {t.turn_id: i for i, t in enumerate(t for hs in haystack() for t in hs.turns)}
        assert [u.bm25 for u in result.units] == pytest.approx([expected[positions[u]] for u in ids(result)])
        assert ids(result)[0] == CAT


def test_session_bm25_scores_whole_session_text() -> None:
    from pipeline.memory.channels.lexical import BM25Index

    q = ask("Marguerite castle bakery")  # the two Marguerite turns sit in different sessions
    result = build(None, channels=only("bm25"), granularity="session").retrieve(q)
    docs = ["\n".join(f"{t.role}: {t.text}" for t in hs.turns) for hs in haystack()]
    expected = BM25Index(docs).scores(q.question)
    assert [u.bm25 for u in result.units] == pytest.approx([expected[int(u.unit_id[1:])] for u in result.units])
    # both sessions match two of the three terms, equally rare; h1 is the shorter document
    assert ids(result) == ["h1", "h0"]


def test_temporal_reference_without_question_date_is_the_latest_memory(encoder: CountingEncoder) -> None:
    # LoCoMo questions carry no date: "yesterday" is read relative to the last session (05-29)
    mem = build(encoder, channels=only("temporal") | {"semantic": True}, temporal_slack_days=0)
    result = mem.retrieve(ask("What did I do yesterday?", date=None))
    assert result.notes["temporal"][0]["start"] == "2023-05-28T00:00:00"
    assert {u.unit_id for u in result.units if u.temporal} == {"h2:0", "h2:1", "h2:2"}


def test_graph_seeds_from_each_channel(encoder: CountingEncoder) -> None:
    q = ask("What photo did my sister send?")
    tops = [ids(build(encoder, channels=only(c)).retrieve(q))[0] for c in ("semantic", "bm25")]
    assert tops == [CASTLE, SISTER_JOB]  # the channels disagree on their best turn
    per_channel = build(encoder, graph_seeds=1, graph_seed_from="channels", knn=0).retrieve(q)
    assert per_channel.notes["graph_seeds"] == 2
    graph = {u.unit_id: u.graph for u in per_channel.units}
    assert graph[CASTLE] >= 1.0 and graph[SISTER_JOB] >= 1.0  # both seeds keep activation 1/1
    fused = build(encoder, graph_seeds=1, knn=0).retrieve(q)
    assert fused.notes["graph_seeds"] == 1


@pytest.mark.parametrize(
    ("question", "cap", "expected"),
    [
        # "yesterday" (05-29 +- 1 day) holds 4 of the 10 turns: log2(10 / 4) = 1.3219 bits x 0.5
        ("What did I do yesterday?", 3.0, 0.5 * 1.321928),
        ("What did I do yesterday?", 1.0, 0.5),  # capped at 1 bit
        ("What did I do this year?", 3.0, 0.0),  # every turn is in the window: no information
    ],
)
def test_temporal_weight_scales_with_window_selectivity(
    encoder: CountingEncoder, question: str, cap: float, expected: float
) -> None:
    mem = build(encoder, temporal_selectivity_cap=cap)
    assert mem.retrieve(ask(question)).notes["temporal_weight"] == pytest.approx(expected, abs=1e-4)
    fixed = build(encoder, temporal_selectivity=False).retrieve(ask(question))
    assert "temporal_weight" not in fixed.notes


def test_content_channels_get_the_question_without_its_time_expression(encoder: CountingEncoder) -> None:
    q = ask("What did I bake this morning?")  # "morning" is only in CAT's session turn h2:2
    stripped = {u.unit_id: u.bm25 for u in build(encoder, channels=only("bm25")).retrieve(q).units}
    bare = {u.unit_id: u.bm25 for u in build(encoder, channels=only("bm25")).retrieve(ask("What did I bake?")).units}
    assert stripped == bare and "h2:2" not in stripped
    kept = build(encoder, channels=only("bm25"), strip_time_expressions=False).retrieve(q)
    assert {u.unit_id for u in kept.units} == {BREAD, "h2:2"}
