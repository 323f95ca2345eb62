"""A chat client that answers every request with a fixed reply function (the parity tests' judge).

Why not the fake OpenAI server: the parity tests score thousands of judge requests whose replies are
fixed by tests/support/parity_inputs_beam.py; what they check is membench's scoring of those replies
(the same replies the official code was given), not the HTTP client, which tests/judges/test_beam.py
and tests/judges/test_llm.py exercise through the fake server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipeline.llm.protocol import ChatRequest, LLMReply


class ReplayClient:
    """``chat`` returns ``reply(messages)``; every request is kept in ``requests``."""

    model = "replay"

    def __init__(self, reply: Callable[[Sequence[Mapping[str, Any]]], str]) -> None:
        self.reply = reply
        self.requests: list[list[dict[str, Any]]] = []

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> LLMReply:
        self.requests.append([dict(m) for m in messages])
        text = self.reply(messages)
        return LLMReply(text, True, None, None, None, 0.0, False, 1, None, model or self.model, "")

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[LLMReply]:
        raise NotImplementedError("the judges under test make one call at a time")
