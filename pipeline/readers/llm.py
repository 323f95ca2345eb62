"""``llm``: an OpenAI-compatible chat model reads the retrieved context and answers.

Multiple choice (LoCoMo-MC10): the ten numbered options, reply = the index only (10 tokens, which
``membench check-config`` reports as fixed), parsed strictly (pipeline.readers.prompts.parse_choice_index);
an unparseable reply is an ``invalid`` answer, never a guess. Temperature and free-form max_tokens
are the ``llm:`` block's unless the reader's params set them. Free form (LoCoMo, LongMemEval): a short answer, with
the question date when the dataset has one. A transport failure raises ReaderCallFailed, which
the stage records as a failed answer (retried next run), not as an invalid or wrong one.

``preset`` selects a published answer protocol instead of membench's own prompt (see
pipeline.readers.presets): ``lme_official``, ``lme_official_cot``, ``lme_official_con``,
``locomo_official`` (``seed`` draws the category-5 option order) or ``mem0_official``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from pipeline.config.model import BenchmarkConfig
from pipeline.llm.identity import not_set
from pipeline.llm.protocol import LLMReply
from pipeline.memory.base import RetrievedUnit
from pipeline.metrics.retrieval import context_units
from pipeline.readers import presets
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
from pipeline.readers.prompts import free_form_prompt, mc_prompt, parse_choice_index, prompts_fingerprint

KIND = "llm"
MC_MAX_TOKENS = 10


class LLMReaderParams(ReaderParams):
    """Unset (None) settings are the ``llm:`` block's, so ``llm.max_tokens`` and ``llm.temperature``
    take effect; a value here overrides them for this reader only."""

    model: str | None = None  # None = the config's llm.model
    temperature: float | None = Field(default=None, ge=0.0)  # None = llm.temperature
    # multiple choice: the reply is one option index, so membench's protocol caps it at 10 tokens
    # (check-config says so when llm.max_tokens differs)
    mc_max_tokens: int = Field(default=MC_MAX_TOKENS, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)  # None = llm.max_tokens
    preset: Literal[
        "membench", "lme_official", "lme_official_cot", "lme_official_con", "locomo_official", "mem0_official"
    ] = "membench"
    seed: int = 0  # locomo_official: seeds the category-5 option order (per question id)


class LLMReader:
    params_model = LLMReaderParams
    kind = KIND
    label = LABEL_LLM
    uses_encoder = False
    uses_llm = True
    thread_safe = True  # the LLM resource bounds concurrency itself

    def __init__(self, params: Mapping[str, Any] | BaseModel, deps: ReaderDeps) -> None:
        self.params = parse_params(self.params_model, params, KIND)
        if deps.llm is None:
            raise ReaderConfigError("reader kind 'llm' needs an LLM endpoint, but the config has no 'llm:' block")
        self.llm = deps.llm

    @classmethod
    def llm_fields(cls, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The ``llm:`` settings its calls take (pipeline/llm/identity.py): the tag, and the temperature
        and reply cap its params leave unset (the model is in ``identity``)."""
        return ("model_tag", *not_set(params, "temperature", "max_tokens"))

    @classmethod
    def identity(cls, params: Mapping[str, Any], cfg: BenchmarkConfig) -> str:
        model = params.get("model") or (cfg.llm.model if cfg.llm else None)
        preset = params.get("preset", presets.PRESET_MEMBENCH)
        if preset == presets.PRESET_MEMBENCH:
            return f"{model}|prompts={prompts_fingerprint()}"
        return f"{model}|prompts={prompts_fingerprint()}|preset={preset}:{presets.presets_fingerprint()}"

    def answer(self, item: ReadInput) -> Answer:
        q = item.question
        if is_multiple_choice(q):
            assert q.choices is not None
            prompt = mc_prompt(q.question, q.choices, item.retrieval.context)
            reply = self._call(prompt, self.params.mc_max_tokens, repeat=item.repeat)
            index = parse_choice_index(reply.text, len(q.choices))
            return _answer(reply, reply.text or "", index, invalid=index is None)
        if self.params.preset != presets.PRESET_MEMBENCH:
            return self._preset_answer(item)
        prompt = free_form_prompt(q.question, item.retrieval.context, q.question_date_raw)
        reply = self._call(prompt, self.params.max_tokens, repeat=item.repeat)
        return _answer(reply, (reply.text or "").strip(), None, invalid=False)

    def _preset_answer(self, item: ReadInput) -> Answer:
        """A free-form answer asked exactly as the preset's published protocol asks it."""
        q, preset = item.question, self.params.preset
        if preset == presets.PRESET_LOCOMO:
            seed = self.params.seed + item.repeat - 1  # each repeat draws its own category-5 order
            lq = presets.locomo_question(q.question, q.type_raw, q.adversarial_answer, q.question_id, seed)
            prompt = presets.locomo_prompt(item.retrieval.context, lq)
            reply = self._call(prompt, self.params.max_tokens, repeat=item.repeat)
            text = (reply.text or "").strip()
            return _answer(reply, presets.locomo_cat5_answer(text, lq.options) if lq.category_5 else text, None,
                           invalid=False)  # fmt: skip
        units = _context(item)
        if preset == presets.PRESET_MEM0:
            memories = [f"{item.session_dates.get(u.session_key) or ''}: {u.text}" for u in units]
            reply = self._call(
                presets.mem0_prompt(memories, q.question), self.params.max_tokens, role="system", repeat=item.repeat
            )
            return _answer(reply, (reply.text or "").strip(), None, invalid=False)
        chunks = _session_chunks(units, item.session_dates)
        date = q.question_date_raw or ""
        contents = None
        if preset == presets.PRESET_LME_CON:
            notes = [
                self._call(presets.lme_con_prompt(c, date, q.question), presets.LME_CON_MAX_TOKENS, repeat=item.repeat)
                for c in chunks
            ]
            contents = [presets.lme_con_content(n.text or "") for n in notes]
        history = presets.lme_history(chunks, contents)
        prompt = presets.lme_prompt(history, date, q.question, cot=preset != presets.PRESET_LME)
        reply = self._call(prompt, self.params.max_tokens, repeat=item.repeat)
        return _answer(reply, (reply.text or "").strip(), None, invalid=False)

    def _call(self, prompt: str, max_tokens: int | None, role: str = "user", repeat: int = 1) -> LLMReply:
        """One chat call; repeat r >= 2 (reader ``repeats``) sends sampling seed r: its own cache key."""
        reply = self.llm.chat(
            [{"role": role, "content": prompt}],
            model=self.params.model,
            temperature=self.params.temperature,
            max_tokens=max_tokens,
            params={"seed": repeat} if repeat > 1 else None,
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


def _context(item: ReadInput) -> list[RetrievedUnit]:
    """The retrieved units that reached the reader's context, in rank order (budget-trimmed suffix dropped)."""
    notes = item.retrieval.notes or {}
    total = notes.get("units_total") if isinstance(notes.get("units_total"), int) else None
    return list(context_units(list(item.retrieval.units), item.retrieval.trimmed_units, total))


def _session_chunks(units: Sequence[RetrievedUnit], dates: Mapping[str, str | None]) -> list[presets.SessionChunk]:
    """Units grouped by session (first appearance order), each session's texts in rank order."""
    by_session: dict[str, list[str]] = {}
    for u in units:
        by_session.setdefault(u.session_key, []).append(u.text)
    return [presets.SessionChunk(dates.get(k) or "", tuple(v)) for k, v in by_session.items()]
