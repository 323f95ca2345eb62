"""Reader kind ``agentic``: the LLM answers after searching the unit's memory system itself.

Instead of one pasted context, the model gets ``search_memory(query, k)`` over the memory system
of its answer unit (``<system>/<reader>``: any kind, plugins included) and answers after at most
``max_steps`` tool calls (pipeline.agentic.loop). The answer row records every step in
``agent_trace`` (JSON: each LLM call's tool calls with query, k, unit ids, errors, and its tokens,
latency and cache hit), ``tool_calls``, ``llm_calls`` and ``capped`` (the budget ran out, the
answer was asked for without tools). The trace also keeps ``union`` (every unit retrieved, in
first-seen order) and ``first_query`` (the first search's ranking): pipeline.report.agentic
scores both with the pinned retrieval metrics.

A failure (LLM call failed, malformed call, too many bad calls, no answer after the cap, memory
not searchable) raises ReaderCallFailed: the unit is recorded failed with the message and retried
by the next run, which replays the finished steps from the LLM cache.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from pipeline.agentic.loop import AgentLoopError, LoopResult, LoopSettings, run_tool_loop
from pipeline.agentic.prompts import agentic_fingerprint, question_prompt, system_prompt
from pipeline.agentic.search import SEARCH_TOOL, MemorySearch, MemoryUnavailable, search_tool
from pipeline.config.model import BenchmarkConfig
from pipeline.memory.base import RetrievedUnit
from pipeline.readers.base import (
    LABEL_LLM,
    Answer,
    ReaderCallFailed,
    ReaderConfigError,
    ReaderDeps,
    ReaderParams,
    ReadInput,
    is_multiple_choice,
    parse_params,
)
from pipeline.readers.prompts import parse_choice_index

KIND = "agentic"
TRACE_VERSION = 1


class AgenticReaderParams(ReaderParams):
    model: str | None = None  # None = the config's llm.model
    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int = Field(default=300, gt=0)
    max_steps: int = Field(default=5, ge=1, le=50)  # tool calls at most
    max_tool_errors: int = Field(default=3, ge=1)  # bad tool calls in a row before the unit fails
    default_k: int = Field(default=5, ge=1)  # search results when the model gives no k
    max_k: int = Field(default=20, ge=1)  # larger k are clipped
    # read tool calls a server leaves in the text (llama-cpp-python's server; pipeline/llm/text_calls.py)
    text_tool_calls: bool = False
    # the first step must search (tool_choice naming search_memory): for models that answer unseen
    first_search: bool = False


def _unit_ref(u: RetrievedUnit, rank: int) -> dict[str, Any]:
    return {"unit_id": u.unit_id, "rank": rank, "session_key": u.session_key, "turn_ids": list(u.turn_ids)}


class _Searches:
    """The searches of one answer: union of units (first-seen order) and the first ranking."""

    def __init__(self, memory: MemorySearch, item: ReadInput) -> None:
        self.memory = memory
        self.item = item
        self.union: dict[str, RetrievedUnit] = {}
        self.first: list[RetrievedUnit] | None = None

    def __call__(self, query: str, k: int) -> Sequence[RetrievedUnit]:
        units = self.memory.search(self.item.system, self.item.question, query, k)
        if self.first is None:
            self.first = list(units)
        for u in units:
            self.union.setdefault(u.unit_id, u)
        return units

    def date(self, session_key: str) -> str | None:
        return self.memory.session_date(self.item.question.dataset, session_key)

    def trace(self, result: LoopResult, settings: AgenticReaderParams) -> str:
        return json.dumps(
            {
                "version": TRACE_VERSION,
                "max_steps": settings.max_steps,
                "capped": result.capped,
                "steps": [s.as_dict() for s in result.steps],
                "union": [_unit_ref(u, i) for i, u in enumerate(self.union.values(), 1)],
                "first_query": [_unit_ref(u, i) for i, u in enumerate(self.first or (), 1)],
            },
            sort_keys=True,
        )


class AgenticReader:
    params_model = AgenticReaderParams
    kind = KIND
    label = LABEL_LLM
    uses_encoder = True  # the memory systems it searches may embed the agent's queries
    uses_llm = True
    thread_safe = True  # the LLM resource bounds concurrency; MemoryAccess serialises searches

    def __init__(self, params: Mapping[str, Any] | BaseModel, deps: ReaderDeps) -> None:
        self.params = parse_params(self.params_model, params, KIND)
        if deps.llm is None:
            raise ReaderConfigError("reader kind 'agentic' needs an LLM endpoint, but the config has no 'llm:' block")
        if deps.memory is None:
            raise ReaderConfigError("reader kind 'agentic' needs access to the ingested memories (ReaderDeps.memory)")
        self.llm = deps.llm
        self.memory: MemorySearch = deps.memory
        self.settings = LoopSettings(
            self.params.max_steps, self.params.max_tool_errors, self.params.model, self.params.temperature,
            self.params.max_tokens, self.params.text_tool_calls, SEARCH_TOOL if self.params.first_search else None,
        )  # fmt: skip

    @classmethod
    def llm_fields(cls, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The ``llm:`` settings its calls take: the tag (the model is in ``identity``; temperature and
        reply cap are its own params, pipeline/agentic/loop.py LoopSettings)."""
        return ("model_tag",)

    @classmethod
    def identity(cls, params: Mapping[str, Any], cfg: BenchmarkConfig) -> str:
        model = params.get("model") or (cfg.llm.model if cfg.llm else None)
        p = parse_params(cls.params_model, params, KIND)
        spec = search_tool(lambda _q, _k: (), lambda _s: None, p.default_k, p.max_k).spec()
        return f"{model}|agentic={agentic_fingerprint([spec])}"

    def answer(self, item: ReadInput) -> Answer:
        q = item.question
        searches = _Searches(self.memory, item)
        tool = search_tool(searches, searches.date, self.params.default_k, self.params.max_k)
        messages = [
            {"role": "system", "content": system_prompt()},
            {"role": "user", "content": question_prompt(q.question, q.question_date_raw, q.choices)},
        ]
        try:
            result = run_tool_loop(self.llm, messages, [tool], self.settings)
        except (AgentLoopError, MemoryUnavailable) as exc:
            raise ReaderCallFailed(f"agentic reader: {exc}") from exc
        index, invalid = None, False
        if is_multiple_choice(q):
            assert q.choices is not None
            index = parse_choice_index(result.answer, len(q.choices))
            invalid = index is None
        return Answer(
            prediction=result.answer,
            predicted_index=index,
            invalid=invalid,
            model=result.model,
            prompt_tokens=result.total("prompt_tokens"),
            completion_tokens=result.total("completion_tokens"),
            latency_s=result.total("latency_s"),
            cache_hit=all(s.cache_hit for s in result.steps),
            cost_usd=result.total("cost_usd"),
            tool_calls=result.tool_calls,
            llm_calls=len(result.steps),
            capped=result.capped,
            agent_trace=searches.trace(result, self.params),
        )
