"""``graphiti``: Zep's ``graphiti-core`` (PyPI) on its embedded Kuzu driver, one Kuzu database per haystack.

Why this shape: it is the product as its users run it (``Graphiti(graph_driver=KuzuDriver(path))``,
one ``add_episode`` per conversation chunk, ``search`` per query), with its own entity and fact
extraction, deduplication, temporal invalidation and hybrid (BM25 + cosine, RRF) search; membench
only supplies the endpoint (pipeline/products/proxy.py: graphiti's ``OpenAIGenericClient`` and
``OpenAIEmbedder`` are pointed at it), the storage location and the session order.

One episode per session: its name is the session key, its body the session's turns as
``Speaker: text`` lines, its reference time the session date. A fact graphiti returns is an edge
that lists the episodes it came from, so every retrieved fact maps back to the session of its first
episode (session-level retrieval metrics work); graphiti extracts facts from a whole episode, so
there are no turn ids (the retrieval notes say ``source_ids: session``).

Choices forced by graphiti 0.31.2 on Kuzu (checked here):

- no ``group_id``: with one, ``add_episode`` fails inside graphiti (``KuzuDriver`` has no
  ``_database``); the haystack's own database already isolates it, so the default group is used;
- ``Graphiti.build_indices_and_constraints`` is a no-op on Kuzu, so the driver's own
  ``graph_ops.build_indices_and_constraints`` creates the full-text indexes its search needs
  (Kuzu's FTS extension is statically linked: nothing is downloaded);
- search recipes without a cross-encoder only (``edge_hybrid_rrf``, graphiti's default for
  ``Graphiti.search``, or ``edge_hybrid_mmr``): its OpenAI reranker needs token ``logprobs``, which
  membench's LLM client does not return; the reranker handed to graphiti is never called;
- telemetry: ``GRAPHITI_TELEMETRY_ENABLED=false`` is set before graphiti is imported (graphiti
  reads it on every event, so no PostHog client is ever built).

Resumption: besides the per-session snapshot of the Kuzu file (pipeline/products/state.py, the
database is checkpointed before it is copied), each session leaves one ``graph_delta`` unit: the
episode, entities, facts and mention edges that ``add_episode`` wrote (without their vectors). When
no snapshot can be trusted the graph is rebuilt by saving those objects again in session order
(graphiti's own ``save``; no LLM call; names and facts embedded again by membench's cached encoder).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import warnings
from collections.abc import Coroutine
from typing import Any, ClassVar, Literal, TypeVar, cast

from pydantic import Field, model_validator

from pipeline.core.records import QuestionRow
from pipeline.memory.base import MemoryUnit, RetrievalResult
from pipeline.memory.context import ORDER_RANK, ranked_result
from pipeline.products.base import (
    ProductMemory,
    ProductParams,
    library_notices_off,
    missing_library,
    speaker_lines,
    usage_note,
)
from pipeline.products.proxy import EndpointOptions
from pipeline.store.corpus import HaystackSession

KIND = "graphiti"
PACKAGE = "graphiti-core[kuzu]==0.31.2"
MODULES = ("graphiti_core", "kuzu")
KIND_GRAPH_DELTA = "graph_delta"
DB_FILE = "graph.kuzu"
PROXY_KEY = "membench-proxy"  # the product never sees the real key: the proxy holds it
UNDATED_BASE = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)  # sessions without a date: one minute apart, in order
T = TypeVar("T")


class GraphitiParams(ProductParams):
    recipe: Literal["edge_hybrid_rrf", "edge_hybrid_mmr"] = "edge_hybrid_rrf"
    max_tokens: int = Field(default=4_096, gt=0)  # per extraction reply (graphiti's own default is 16384)
    # json_object: schema in the prompt; json_object_schema: graphiti asks json_schema, the proxy sends it
    # upstream as json_object + schema (llama-cpp-python's schema-constrained JSON; pipeline/products/proxy.py)
    structured_output: Literal["json_schema", "json_object", "json_object_schema"] = "json_schema"

    @model_validator(mode="before")
    @classmethod
    def check_library(cls, data: Any) -> Any:
        problem = library_problem()
        if problem:
            raise ValueError(problem)
        return data


def library_problem() -> str | None:
    """The one-line config error when graphiti-core or its Kuzu driver is missing, else None."""
    return next((p for m in MODULES if (p := missing_library(KIND, m, PACKAGE))), None)


def graphiti_mode(structured_output: str) -> Literal["json_schema", "json_object"]:
    """What graphiti itself asks for: json_object only when told so (json_object_schema is a proxy form)."""
    return "json_object" if structured_output == "json_object" else "json_schema"


def _quiet_import() -> Any:
    """The ``graphiti_core`` pieces membench uses, imported with telemetry off."""
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    with library_notices_off():  # pydantic's notice about graphiti's class-based config, among others
        import graphiti_core
        import graphiti_core.cross_encoder.openai_reranker_client
        import graphiti_core.driver.kuzu_driver
        import graphiti_core.embedder.openai
        import graphiti_core.llm_client.openai_generic_client
        import graphiti_core.search.search_config_recipes

    return graphiti_core


def reference_time(session: HaystackSession) -> dt.datetime:
    """The episode's reference time: the session date (UTC when naive), else a stand-in that keeps order."""
    when = session.session.datetime
    if when is None:
        return UNDATED_BASE + dt.timedelta(minutes=session.position)
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


class GraphitiMemory(ProductMemory):
    """graphiti's ``Graphiti`` on a Kuzu file per haystack; LLM and embeddings via membench."""

    kind = KIND
    params_model = GraphitiParams
    library: ClassVar[tuple[str, str]] = (MODULES[0], PACKAGE)
    params: GraphitiParams

    def endpoint_options(self) -> EndpointOptions:
        if self.params.structured_output == "json_object_schema":
            return EndpointOptions(schema_format="json_object_schema")
        return EndpointOptions()

    def _open(self) -> None:
        problem = library_problem()
        if problem:
            raise RuntimeError(problem)
        _quiet_import()
        from graphiti_core import Graphiti
        from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
        from graphiti_core.driver.kuzu_driver import KuzuDriver
        from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
        from graphiti_core.llm_client.config import LLMConfig
        from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient
        from openai import AsyncOpenAI

        if not hasattr(self, "_loop"):
            self._loop = asyncio.new_event_loop()
        path = self.live_dir / DB_FILE
        fresh = not path.exists()
        llm = LLMConfig(api_key=PROXY_KEY, model=self.chat_model, small_model=self.chat_model, base_url=self.base_url)
        embedder = OpenAIEmbedderConfig(
            api_key=PROXY_KEY, base_url=self.base_url, embedding_model=self.embed_model, embedding_dim=self.embed_dims
        )
        with warnings.catch_warnings():  # the Kuzu backend's deprecation notice: said in docs/guide/products.md
            warnings.simplefilter("ignore", DeprecationWarning)
            self.driver = KuzuDriver(str(path))
        # graphiti's own OpenAI clients, with membench's patience and no retry of their own (membench retries)
        client = AsyncOpenAI(api_key=PROXY_KEY, base_url=self.base_url, timeout=self.call_timeout_s, max_retries=0)
        self.graphiti = Graphiti(
            graph_driver=self.driver,
            llm_client=OpenAIGenericClient(
                llm,
                client=client,
                max_tokens=self.params.max_tokens,
                structured_output_mode=graphiti_mode(self.params.structured_output),
            ),
            embedder=OpenAIEmbedder(embedder, client=client),
            cross_encoder=OpenAIRerankerClient(llm),  # not called by the recipes offered (see module doc)
        )
        if fresh:
            self._run(self.driver.graph_ops.build_indices_and_constraints(self.driver))
        self.episodes = self._run(self._episode_sessions())

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coro)

    async def _episode_sessions(self) -> dict[str, tuple[str, dt.datetime | None]]:
        """Episode uuid -> (session key, reference time) for every episode in the graph."""
        rows, _, _ = await self.driver.execute_query(
            "MATCH (e:Episodic) RETURN e.uuid AS uuid, e.name AS name, e.valid_at AS at"
        )
        return {str(r["uuid"]): (str(r["name"]), r["at"]) for r in cast(list[dict[str, Any]], rows)}

    def _checkpoint(self) -> None:
        """Fold Kuzu's write-ahead log into the database file, so the snapshot copy is complete."""
        self._run(self.driver.execute_query("CHECKPOINT"))

    def _ingest(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        from graphiti_core.nodes import EpisodeType

        key, when = session.session.session_key, reference_time(session)
        date = session.session.datetime_raw or when.isoformat()
        result = self._run(
            self.graphiti.add_episode(
                name=key, episode_body=speaker_lines(session), source=EpisodeType.message,
                source_description=f"conversation session {key} ({date})", reference_time=when,
            )
        )  # fmt: skip
        self._checkpoint()
        episode = result.episode
        self.episodes[episode.uuid] = (key, when)
        created = [e for e in result.edges if e.episodes[:1] == [episode.uuid]]
        units = [
            MemoryUnit(f"{key}#graphiti-{i}", haystack_id, key, session.position, (), e.fact, when, "memory", "note")
            for i, e in enumerate(created)
        ]
        delta = {  # without the vectors: a rebuild embeds names and facts again (membench's embedding cache)
            "episode": episode.model_dump(mode="json"),
            "nodes": [n.model_dump(mode="json", exclude={"name_embedding"}) for n in result.nodes],
            "edges": [e.model_dump(mode="json", exclude={"fact_embedding"}) for e in result.edges],
            "episodic_edges": [e.model_dump(mode="json") for e in result.episodic_edges],
        }
        text = json.dumps(delta, sort_keys=True)
        units.append(MemoryUnit(f"{key}#{KIND_GRAPH_DELTA}", haystack_id, key, session.position, (), text, when,
                                "system", KIND_GRAPH_DELTA))  # fmt: skip
        return units

    def _rebuild(self, memories: list[MemoryUnit]) -> None:
        """Save every session's episode, entities, facts and mentions again, in session order: no LLM call;
        names and facts are embedded again through the proxy (membench's embedding cache)."""
        from graphiti_core.edges import EntityEdge, EpisodicEdge
        from graphiti_core.nodes import EntityNode, EpisodicNode

        deltas = sorted((u for u in memories if u.kind == KIND_GRAPH_DELTA), key=lambda u: u.session_position)
        for unit in deltas:
            delta = json.loads(unit.text)
            nodes = [EntityNode.model_validate(n) for n in delta["nodes"]]
            edges = [EntityEdge.model_validate(e) for e in delta["edges"]]
            for node in nodes:
                self._run(node.generate_name_embedding(self.graphiti.embedder))
            for edge in edges:
                self._run(edge.generate_embedding(self.graphiti.embedder))
            objects: list[Any] = [EpisodicNode.model_validate(delta["episode"]), *nodes, *edges]
            objects += [EpisodicEdge.model_validate(e) for e in delta["episodic_edges"]]
            for obj in objects:
                self._run(obj.save(self.driver))
        self._checkpoint()
        self.episodes = self._run(self._episode_sessions())

    def _search(self, question: QuestionRow) -> RetrievalResult:
        from graphiti_core.search.search_config_recipes import EDGE_HYBRID_SEARCH_MMR, EDGE_HYBRID_SEARCH_RRF
        from graphiti_core.search.search_filters import SearchFilters

        recipe = EDGE_HYBRID_SEARCH_RRF if self.params.recipe == "edge_hybrid_rrf" else EDGE_HYBRID_SEARCH_MMR
        config = recipe.model_copy(update={"limit": self.params.top_k})
        found = self._run(self.graphiti.search_(question.question, config=config, search_filter=SearchFilters()))
        ranked = []
        scores = found.edge_reranker_scores
        for rank, edge in enumerate(found.edges):
            key, when = self.episodes.get(edge.episodes[0], ("", None)) if edge.episodes else ("", None)
            unit = MemoryUnit(
                edge.uuid, question.haystack_id, key, self.positions.get(key, -1), (), edge.fact,
                edge.valid_at or when, "memory", "note",
            )  # fmt: skip
            ranked.append((unit, float(scores[rank]) if rank < len(scores) else 0.0))
        notes = usage_note({
            "product": PACKAGE, "recipe": self.params.recipe,
            "turn_ids": "none: graphiti facts come from a whole episode (one session); each maps to its first episode",
        })  # fmt: skip
        return ranked_result(ranked, self.params.token_budget, ORDER_RANK, {}, notes)
