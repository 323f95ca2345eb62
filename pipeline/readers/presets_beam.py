"""Reader presets of BEAM and LoCoMo-Plus: each asks the question as its official answer code does.

- ``beam_official``: BEAM's RAG baseline (``src/answer_probing_questions/long_term_memory_methods.py``,
  ``evaluation_type rag``): ``answer_generation_for_rag`` (``BEAM_RAG_ANSWER_PROMPT``) with
  ``<context>`` and then ``<question>`` replaced, one user message, temperature 0 (``BuildLLm``'s), no
  max_tokens; the reply is kept as returned (the official code stores ``.content`` unstripped, and
  the judge sees it so). The context is the memory system's (the official one concatenates the
  retrieved chunks' ``page_content`` up to 29,000 x 3.5 characters).
- ``beam_official_long_context``: BEAM's long-context baseline (the same file, ``evaluation_type
  long-context``): the chat as chat messages (``{role, content}``, contents verbatim, markers
  included), then one user message ``BEAM_LONG_CONTEXT_QUESTION`` with the question; temperature 0.
  Here the messages are the memory's retrieved units in its order (``full_context``: the haystack in
  time order, oldest dropped past its budget, as the official ``prune_from_tail`` drops the oldest),
  each unit ``<role>: <content>`` read back as one message (a unit without a user/assistant prefix,
  e.g. a summary, is a user message).
- ``locomo_plus_official``: LoCoMo-Plus's ``evaluation_framework/task_eval/utils.py`` ``call_llm``
  for the Cognitive category: ``CONV_START_PROMPT`` filled with "A" and "B" (the official call
  passes no speaker names), ``INSTRUCTION_COGNITIVE``, then the dialogue stripped, as one user
  message at temperature 0.3 (``evaluate.sh``'s default) with max_tokens 1024 (``evaluate_qa.py``'s
  default); the reply stripped ("(empty)" where nothing is left: membench's client already fails an
  empty completion, which is asked again rather than judged). The dialogue is the memory system's
  context followed by the trigger query (the question, already rendered ``<speaker> said, "..."``);
  the official input is the whole stitched conversation in that rendering.

A reader's own ``temperature`` / ``max_tokens`` params override the protocol values (and
``membench check-config`` lists the values each preset fixes).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

BEAM_RAG_ANSWER_PROMPT = (
    "\n"
    "You are an assistant that MUST answer questions using ONLY the information provided in the context"
    " below. \n"
    "\n"
    "STRICT INSTRUCTIONS:\n"
    "1. Answer ONLY based on the provided context\n"
    "2. Do NOT use your internal knowledge\n"
    "\n"
    "CONTEXT:\n"
    "<context>\n"
    "\n"
    "QUESTION:\n"
    "<question>\n"
    "\n"
    "ANSWER REQUIREMENTS:\n"
    "- Be direct and concise\n"
    "- Only output the answer to the question without any explanation \n"
    "\n"
    "RESPONSE:\n"
)
LOCOMO_PLUS_CONV_START = (
    "Below is a conversation between two people: {} and {}. The conversation takes place over multiple"
    " days, and the date of each conversation is written at the beginning of the conversation.\n"
    "\n"
)
LOCOMO_PLUS_COGNITIVE_INSTRUCTION = (
    "Your task: This is a memory-aware dialogue setting. You are continuing or reflecting on a prior"
    " conversation. Show that you are aware of the relevant memory or context from the evidence when you"
    " respond; your answer should naturally connect to or acknowledge that context.\n"
    "\n"
)
BEAM_LONG_CONTEXT_QUESTION = (
    "\n            NOTE: Only provide the answer without any explanations. \n            Question: {query}"
)
_ROLE_UNIT = re.compile(r"(user|assistant): (.*)\Z", re.DOTALL)
LOCOMO_PLUS_SPEAKERS = ("A", "B")  # what utils.py fills CONV_START_PROMPT with
LOCOMO_PLUS_EMPTY_REPLY = "(empty)"
BEAM_TEMPERATURE = 0.0
LOCOMO_PLUS_TEMPERATURE = 0.3
LOCOMO_PLUS_MAX_TOKENS = 1024


def beam_rag_prompt(context: str, question: str) -> str:
    """``<context>`` first, then ``<question>`` (a context holding "<question>" gets the question too)."""
    return BEAM_RAG_ANSWER_PROMPT.replace("<context>", context).replace("<question>", question)


def beam_long_context_messages(unit_texts: Sequence[str], question: str) -> list[dict[str, str]]:
    """The chat as messages (each unit ``<role>: <content>``), then the official question message."""
    messages = []
    for text in unit_texts:
        m = _ROLE_UNIT.match(text)
        messages.append({"role": m.group(1), "content": m.group(2)} if m else {"role": "user", "content": text})
    messages.append({"role": "user", "content": BEAM_LONG_CONTEXT_QUESTION.format(query=question)})
    return messages


def locomo_plus_prompt(context: str, question: str) -> str:
    """The official model input for a Cognitive item, the memory's context standing for the dialogue."""
    body = f"{context}\n{question}".strip()
    return LOCOMO_PLUS_CONV_START.format(*LOCOMO_PLUS_SPEAKERS) + LOCOMO_PLUS_COGNITIVE_INSTRUCTION + body


def locomo_plus_reply(text: str | None) -> str:
    """The prediction as utils.py returns it: stripped, "(empty)" for an empty reply."""
    stripped = (text or "").strip()
    return stripped if stripped else LOCOMO_PLUS_EMPTY_REPLY


def presets_fingerprint() -> str:
    """Hash of these presets' texts and fixed values (hashed into the answers of the LLM reader)."""
    blob = "\x00".join(
        (BEAM_RAG_ANSWER_PROMPT, BEAM_LONG_CONTEXT_QUESTION, _ROLE_UNIT.pattern, LOCOMO_PLUS_CONV_START,
         LOCOMO_PLUS_COGNITIVE_INSTRUCTION, *LOCOMO_PLUS_SPEAKERS, LOCOMO_PLUS_EMPTY_REPLY, str(BEAM_TEMPERATURE),
         str(LOCOMO_PLUS_TEMPERATURE), str(LOCOMO_PLUS_MAX_TOKENS))
    )  # fmt: skip
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
