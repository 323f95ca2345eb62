"""Tool calls a server returned as the model's text: opt-in parsing for the agentic loop.

Why: an OpenAI-compatible server that renders the model's chat template but does not parse its
tool calls back (llama-cpp-python's server with the template stored in the GGUF, as
scripts/serve_local_llm.sh runs it) returns what the model wrote, for Qwen2.5
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, or only the JSON object, sometimes
wrapped in doubled braces. With ``text_tool_calls`` on, such a reply is read as those calls; any
other text stays the answer. The ids are made up from the step (the model wrote none), so a
rerun builds the same messages and replays from the LLM cache.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


def _call_object(text: str) -> dict[str, Any] | None:
    """``{"name": str, "arguments": object|str}`` from one JSON text (doubled braces allowed)."""
    text = text.strip()
    while True:
        try:
            value = json.loads(text)
            break
        except ValueError:
            if text.startswith("{{") and text.endswith("}}"):
                text = text[1:-1].strip()
                continue
            return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or "arguments" not in value:
        return None
    return value


def tool_calls_in_text(text: str | None, step: int) -> list[dict[str, Any]]:
    """The tool calls written in ``text`` in the OpenAI wire format (empty: ``text`` is an answer)."""
    if not text or not text.strip():
        return []
    blocks = _TAGGED.findall(text) if "<tool_call>" in text else [text]
    found = [_call_object(b) for b in blocks]
    if not found or any(f is None for f in found):
        return []
    calls = []
    for i, call in enumerate(f for f in found if f is not None):
        args = call["arguments"]
        calls.append({
            "id": f"text_call_{step}_{i}",
            "type": "function",
            "function": {"name": call["name"], "arguments": args if isinstance(args, str) else json.dumps(args)},
        })  # fmt: skip
    return calls
