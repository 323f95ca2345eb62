"""``llm``: an OpenAI-compatible chat model reads the retrieved context and answers.

Multiple choice (LoCoMo-MC10): the ten numbered options, reply = the index only (temperature 0,
10 tokens), parsed strictly (pipeline.readers.prompts.parse_choice_index); an unparseable reply
is an ``invalid`` answer, never a guess. Free form (LoCoMo, LongMemEval): a short answer, with
the question date when the dataset has one. A transport failure raises ReaderCallFailed, which
the stage records as a failed answer (retried next run), not as an invalid or wrong one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from pipeline.config import BenchmarkConfig
from pipeline.llm_protocol import LLMReply
from pipeline.readers.base import (
    LABEL_LLM,
    READERS,
    Answer,
    ReaderCallFailed,
    ReaderConfigError,
    ReaderDeps,
    ReaderParams,
    ReadInput,
    is_multiple_choice,
    parse_params,
)
from pipeline.readers.prompts import free_form_prompt, mc_prompt, parse_choice_index, prompts_fingerprint

KIND = "llm"


class LLMReaderParams(ReaderParams):
    model: str | None = None  # None = the config's llm.model
    temperature: float = Field(default=0.0, ge=0.0)
    mc_max_tokens: int = Field(default=10, gt=0)
    max_tokens: int = Field(default=200, gt=0)


@READERS.register(KIND)
class LLMReader:
    params_model = LLMReaderParams
    kind = KIND
    label = LABEL_LLM
    uses_encoder = False
    uses_llm = True
    thread_safe = True  # the LLM resource bounds concurrency itself

    def __init__(self, params: dict[str, Any], deps: ReaderDeps) -> None:
        self.params = parse_params(self.params_model, params, KIND)
        if deps.llm is None:
            raise ReaderConfigError("reader kind 'llm' needs an LLM endpoint, but the config has no 'llm:' block")
        self.llm = deps.llm

    @classmethod
    def identity(cls, params: Mapping[str, Any], cfg: BenchmarkConfig) -> str:
        model = params.get("model") or (cfg.llm.model if cfg.llm else None)
        return f"{model}|prompts={prompts_fingerprint()}"

    def answer(self, item: ReadInput) -> Answer:
        q = item.question
        if is_multiple_choice(q):
            assert q.choices is not None
            prompt = mc_prompt(q.question, q.choices, item.retrieval.context)
            reply = self._call(prompt, self.params.mc_max_tokens)
            index = parse_choice_index(reply.text, len(q.choices))
            return _answer(reply, reply.text or "", index, invalid=index is None)
        prompt = free_form_prompt(q.question, item.retrieval.context, q.question_date_raw)
        reply = self._call(prompt, self.params.max_tokens)
        return _answer(reply, (reply.text or "").strip(), None, invalid=False)

    def _call(self, prompt: str, max_tokens: int) -> LLMReply:
        reply = self.llm.chat(
            [{"role": "user", "content": prompt}],
            model=self.params.model,
            temperature=self.params.temperature,
            max_tokens=max_tokens,
        )
        if not reply.ok:
            raise ReaderCallFailed(f"LLM call failed ({reply.model}): {reply.error}")
        return reply


def _answer(reply: LLMReply, prediction: str, index: int | None, *, invalid: bool) -> Answer:
    return Answer(
        prediction=prediction,
        predicted_index=index,
        invalid=invalid,
        model=reply.model,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        latency_s=reply.latency_s,
        cache_hit=reply.cache_hit,
        cost_usd=reply.cost_usd,
    )
