"""Reader presets: the published answer protocols, selectable by name (``readers: [{kind: llm,
params: {preset: <name>}}]``).

Why presets: a number is only comparable with a published one when the reader asks the way the
paper did. Each preset is one pinned name; its prompt texts are module constants (hashed into the
answers' config through ``presets_fingerprint``). Sources:

- ``lme_official`` / ``lme_official_cot``: LongMemEval ``src/generation/run_generation.py``
  (MIT): the answer template without / with step-by-step reasoning, the retrieved history as
  ``### Session i`` blocks sorted by session date, each session's content in JSON
  (``history_format json``), and ``Current Date`` = the question date.
- ``lme_official_con``: the same with Chain-of-Note (``--con true``, used with CoT): one extra call
  per session with LongMemEval's note prompt (temperature 0, 500 tokens); the session's content
  becomes ``{"session_summary": <note>}``.
- ``locomo_official``: LoCoMo ``task_eval/evaluate_gpts.py`` (snap-research/locomo, branch
  ``code``, commit 9228632; CC BY-NC 4.0): the context, a blank line, then the short-answer QA
  prompt (``QA_PROMPT`` / ``QA_PROMPT_CAT_5``, batch size 1); category 2 appends the date hint
  ``LOCOMO_CAT_2_HINT``; category 5 becomes a two-way choice between "Not mentioned in the conversation" and the
  adversarial answer, in an order drawn by a seeded RNG per question (``seed`` param), and a reply
  naming an option letter is mapped back to the option text (LoCoMo's ``get_cat_5_answer``).
- ``mem0_official``: mem0 ``evaluation/prompts.py`` ``ANSWER_PROMPT`` (Apache-2.0), sent as one
  system message, temperature 0.
- ``beam_official``, ``beam_official_long_context`` and ``locomo_plus_official``: BEAM's RAG answer
  prompt, its long-context messages, and LoCoMo-Plus's
  Cognitive input (texts and rules in pipeline/readers/presets_beam.py, hashed apart, so adding
  them left the answers of the presets above untouched).

Deviations, on purpose and documented: membench units carry rendered text, not LongMemEval's
``{role, content}`` dicts, so a session's JSON content is the JSON list of its retrieved unit
texts; LoCoMo's context is the memory system's context string; mem0 retrieves memories per
speaker, membench's memories are one list, given as speaker 1's with an empty speaker 2 block.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PRESET_MEMBENCH = "membench"
PRESET_LME = "lme_official"
PRESET_LME_COT = "lme_official_cot"
PRESET_LME_CON = "lme_official_con"
PRESET_LOCOMO = "locomo_official"
PRESET_MEM0 = "mem0_official"
PRESET_BEAM = "beam_official"
PRESET_BEAM_LONG_CONTEXT = "beam_official_long_context"
PRESET_LOCOMO_PLUS = "locomo_plus_official"
PRESETS: tuple[str, ...] = (
    PRESET_MEMBENCH, PRESET_LME, PRESET_LME_COT, PRESET_LME_CON, PRESET_LOCOMO, PRESET_MEM0, PRESET_BEAM,
    PRESET_BEAM_LONG_CONTEXT, PRESET_LOCOMO_PLUS,
)  # fmt: skip
# presets whose texts live in pipeline/readers/presets_beam.py (their own fingerprint)
BEAM_PRESETS: tuple[str, ...] = (PRESET_BEAM, PRESET_BEAM_LONG_CONTEXT, PRESET_LOCOMO_PLUS)

# ---- LongMemEval (run_generation.py) ----------------------------------------------------------------
LME_ANSWER_PROMPT = (
    "I will give you several history chats between you and a user. Please answer the question based on the "
    "relevant chat history.\n\n\nHistory Chats:\n\n{}\n\nCurrent Date: {}\nQuestion: {}\nAnswer:"
)
LME_ANSWER_PROMPT_COT = (
    "I will give you several history chats between you and a user. Please answer the question based on the "
    "relevant chat history. Answer the question step by step: first extract all the relevant information, and "
    "then reason over the information to get the answer.\n\n\nHistory Chats:\n\n{}\n\nCurrent Date: {}\n"
    "Question: {}\nAnswer (step by step):"
)
LME_CON_PROMPT = (
    "I will give you a chat history between you and a user, as well as a question from the user. Write reading "
    "notes to extract all the relevant user information relevant to answering the answer. If no relevant "
    'information is found, just output "empty". \n\n\nChat History:\nSession Date: {}\nSession Content:\n{}\n\n'
    "Question Date: {}\nQuestion: {}\nExtracted note (information relevant to answering the question):"
)
LME_SESSION_BLOCK = "\n### Session {}:\nSession Date: {}\nSession Content:\n{}\n"
LME_CON_MAX_TOKENS = 500

# ---- LoCoMo (task_eval/evaluate_gpts.py) -------------------------------------------------------------
LOCOMO_QA_PROMPT = (
    "\nBased on the above context, write an answer in the form of a short phrase for the following question. "
    "Answer with exact words from the context whenever possible.\n\nQuestion: {} Short answer:\n"
)
LOCOMO_QA_PROMPT_CAT_5 = "\nBased on the above context, answer the following question.\n\nQuestion: {} Short answer:\n"
LOCOMO_CAT_2_HINT = " Use DATE of CONVERSATION to answer with an approximate date."
LOCOMO_CAT_5_CHOICE = " Select the correct answer: (a) {} (b) {}. "
LOCOMO_NOT_MENTIONED = "Not mentioned in the conversation"
LOCOMO_CONTEXT_SEPARATOR = "\n\n"  # between the context and the QA template (batch size 1)

# ---- mem0 (evaluation/prompts.py ANSWER_PROMPT; Jinja placeholders rendered by plain replacement) -----
MEM0_ANSWER_PROMPT = """
    You are an intelligent memory assistant tasked with retrieving accurate information from conversation memories.

    # CONTEXT:
    You have access to memories from two speakers in a conversation. These memories contain 
    timestamped information that may be relevant to answering the question.

    # INSTRUCTIONS:
    1. Carefully analyze all provided memories from both speakers
    2. Pay special attention to the timestamps to determine the answer
    3. If the question asks about a specific event or fact, look for direct evidence in the memories
    4. If the memories contain contradictory information, prioritize the most recent memory
    5. If there is a question about time references (like "last year", "two months ago", etc.), 
       calculate the actual date based on the memory timestamp. For example, if a memory from 
       4 May 2022 mentions "went to India last year," then the trip occurred in 2021.
    6. Always convert relative time references to specific dates, months, or years. For example, 
       convert "last year" to "2022" or "two months ago" to "March 2023" based on the memory 
       timestamp. Ignore the reference while answering the question.
    7. Focus only on the content of the memories from both speakers. Do not confuse character 
       names mentioned in memories with the actual users who created those memories.
    8. The answer should be less than 5-6 words.

    # APPROACH (Think step by step):
    1. First, examine all memories that contain information related to the question
    2. Examine the timestamps and content of these memories carefully
    3. Look for explicit mentions of dates, times, locations, or events that answer the question
    4. If the answer requires calculation (e.g., converting relative time references), show your work
    5. Formulate a precise, concise answer based solely on the evidence in the memories
    6. Double-check that your answer directly addresses the question asked
    7. Ensure your final answer is specific and avoids vague time references

    Memories for user {{speaker_1_user_id}}:

    {{speaker_1_memories}}

    Memories for user {{speaker_2_user_id}}:

    {{speaker_2_memories}}

    Question: {{question}}

    Answer:
    """  # noqa: W291 - mem0's text keeps its trailing spaces


@dataclass(frozen=True)
class SessionChunk:
    """The retrieved text of one session, in rank order, with its raw date."""

    date: str
    texts: tuple[str, ...]


def lme_session_content(texts: Sequence[str]) -> str:
    """``history_format json``: '\\n' + the JSON of the session's entries (here: its unit texts)."""
    return "\n" + json.dumps(list(texts))


def lme_history(chunks: Sequence[SessionChunk], contents: Sequence[str] | None = None) -> str:
    """LongMemEval's history string: sessions sorted by date, one ``### Session i`` block each.

    ``contents`` replaces each chunk's JSON content (Chain-of-Note passes its notes); aligned with
    ``chunks`` before sorting."""
    bodies = list(contents) if contents is not None else [lme_session_content(c.texts) for c in chunks]
    ordered = sorted(zip(chunks, bodies, strict=True), key=lambda cb: cb[0].date)  # as run_generation: by date
    return "".join(LME_SESSION_BLOCK.format(i + 1, c.date, body) for i, (c, body) in enumerate(ordered))


def lme_prompt(history: str, question_date: str, question: str, *, cot: bool) -> str:
    return (LME_ANSWER_PROMPT_COT if cot else LME_ANSWER_PROMPT).format(history, question_date, question)


def lme_con_prompt(chunk: SessionChunk, question_date: str, question: str) -> str:
    return LME_CON_PROMPT.format(chunk.date, json.dumps(list(chunk.texts)), question_date, question)


def lme_con_content(note: str) -> str:
    return "\n" + json.dumps({"session_summary": note.strip()})


@dataclass(frozen=True)
class LocomoQuestion:
    """The question text LoCoMo sends and, for category 5, the letter -> option mapping."""

    text: str
    options: Mapping[str, str]
    category_5: bool


def locomo_question(
    question: str, category: str, adversarial_answer: str | None, question_id: str, seed: int
) -> LocomoQuestion:
    """Category 2: the date hint; category 5: a two-way choice whose order a seeded RNG draws."""
    if category == "2":
        return LocomoQuestion(question + LOCOMO_CAT_2_HINT, {}, False)
    if category == "5":
        other = adversarial_answer or ""
        if random.Random(f"{seed}:{question_id}").random() < 0.5:
            options = {"a": LOCOMO_NOT_MENTIONED, "b": other}
        else:
            options = {"a": other, "b": LOCOMO_NOT_MENTIONED}
        return LocomoQuestion(question + LOCOMO_CAT_5_CHOICE.format(options["a"], options["b"]), options, True)
    return LocomoQuestion(question, {}, False)


def locomo_prompt(context: str, q: LocomoQuestion) -> str:
    """The context, a blank line, then the QA template (which itself starts with a newline)."""
    template = LOCOMO_QA_PROMPT_CAT_5 if q.category_5 else LOCOMO_QA_PROMPT
    return context + LOCOMO_CONTEXT_SEPARATOR + template.format(q.text)


def locomo_cat5_answer(reply: str, options: Mapping[str, str]) -> str:
    """LoCoMo's get_cat_5_answer: a bare 'a'/'b' or '(a)'/'(b)' reply becomes that option's text."""
    text = reply.strip().lower()
    if len(text) == 1:
        return options["a"] if "a" in text else options["b"]
    if len(text) == 3:
        return options["a"] if "(a)" in text else options["b"] if "(b)" in text else reply
    return reply


def mem0_prompt(
    memories: Sequence[str], question: str, speaker_1: str = "speaker_1", speaker_2: str = "speaker_2"
) -> str:
    """mem0's ANSWER_PROMPT rendered as its Jinja template would be (memories as indented JSON)."""
    values = {
        "speaker_1_user_id": speaker_1,
        "speaker_2_user_id": speaker_2,
        "speaker_1_memories": json.dumps(list(memories), indent=4),
        "speaker_2_memories": json.dumps([], indent=4),
        "question": question,
    }
    out = MEM0_ANSWER_PROMPT
    for name, value in values.items():
        out = out.replace("{{" + name + "}}", value)
    return out


def presets_fingerprint() -> str:
    """Hash of every preset text: editing one invalidates the stored answers of the LLM reader."""
    blob = "\x00".join(
        (LME_ANSWER_PROMPT, LME_ANSWER_PROMPT_COT, LME_CON_PROMPT, LME_SESSION_BLOCK, str(LME_CON_MAX_TOKENS),
         LOCOMO_QA_PROMPT, LOCOMO_QA_PROMPT_CAT_5, LOCOMO_CAT_2_HINT, LOCOMO_CAT_5_CHOICE, LOCOMO_NOT_MENTIONED,
         LOCOMO_CONTEXT_SEPARATOR, MEM0_ANSWER_PROMPT)
    )  # fmt: skip
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
