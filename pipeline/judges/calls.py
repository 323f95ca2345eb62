"""How an LLM judge makes its calls: the one place that turns a reply into a verdict or a failure.

Why shared: every LLM judge (LongMemEval's, mem0's, BEAM's rubric and alignment calls,
LoCoMo-Plus's) must treat a transport failure, an empty completion and an unusable reply the same
way: a failed call raises JudgeFailed (retried next run, never scored); an unusable reply is
discarded from the LLM cache before UnparseableVerdict is raised, so the next run asks again
instead of replaying it; a judge repeat (``repeats``) sends its own sampling seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pipeline.judges.base import JudgeContext, JudgeFailed, UnparseableVerdict, judge_model
from pipeline.llm.cache import discard_reply
from pipeline.llm.protocol import EMPTY_COMPLETION, LLMReply, Message

JUDGE_TEMPERATURE = 0.0  # every protocol here judges at temperature 0 (llm.temperature is not used)


def judge_chat(
    ctx: JudgeContext,
    messages: Sequence[Message],
    max_tokens: int | None,
    *,
    params: Mapping[str, Any] | None = None,
    empty_is_reply: bool = False,
) -> LLMReply:
    """One judge call; a transport failure raises JudgeFailed. ``empty_is_reply``: an empty
    completion (which the LLM client reports as a malformed reply) is returned as the text ""."""
    if ctx.llm is None:
        raise JudgeFailed("this judge needs an LLM and none is configured")
    if ctx.repeat > 1:  # a judge repeat: its own sampling seed and LLM cache key
        params = {**(params or {}), "seed": ctx.repeat}
    reply = ctx.llm.chat(
        messages,
        model=ctx.model or judge_model(ctx.params, None),  # None: the client's model, the endpoint's
        temperature=JUDGE_TEMPERATURE,
        max_tokens=max_tokens,
        params=params,
    )
    if not reply.ok and empty_is_reply and EMPTY_COMPLETION in (reply.error or ""):
        return replace(reply, text="", ok=True, error=None)
    if not reply.ok:
        raise JudgeFailed(f"judge LLM call failed ({reply.model}): {reply.error}")
    return reply


def unparseable(reply: LLMReply, what: str) -> UnparseableVerdict:
    """Discard the reply from the LLM cache (so the next attempt asks again) and build the error."""
    discard_reply(reply.cache_key, f"unparseable judge verdict ({what})")
    return UnparseableVerdict(f"judge reply is {what}: {reply.text!r:.200}")
