"""LLM judges: LongMemEval's official answer check and a mem0-style LoCoMo CORRECT/WRONG judge.

``lme_official_llm_judge``: the prompts of LongMemEval's ``src/evaluation/evaluate_qa.py``
(``get_anscheck_prompt``, MIT licence), one per question type; abstention is decided by the
question id ending in "_abs" BEFORE the type. Call settings as the official script: one user
message, temperature 0, max_tokens 10. Deviation, on purpose: the official script counts any reply
containing "yes" as correct (so "no, not yes" is correct and an empty reply is wrong); here the
reply must be a clear yes or no (``parse_yes_no``), anything else is a FAILED judgment.

``locomo_llm_judge``: mem0's LoCoMo ``ACCURACY_PROMPT`` (generous on wording and date formats),
temperature 0. The label is read from the JSON ``{"label": ...}`` the prompt asks for (or a
reply that names exactly one of CORRECT/WRONG); anything else is a FAILED judgment. mem0 skipped
category 5; here its gold is LoCoMo's own adversarial option "Not mentioned in the conversation".

Both go through the LLM resource, so judgments are cached like answers (model, prompt, params).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pipeline.judges.base import (
    AGG_ACCURACY,
    KIND_LOCOMO,
    KIND_LONGMEMEVAL,
    METRIC_LME_OFFICIAL_LLM_JUDGE,
    METRIC_LOCOMO_LLM_JUDGE,
    JudgeContext,
    JudgeFailed,
    JudgeInput,
    JudgeSpec,
    Verdict,
    register,
    text_fingerprint,
)
from pipeline.judges.lme import is_lme_abstention, lme_gold
from pipeline.judges.locomo import CAT_ADVERSARIAL, category
from pipeline.llm_protocol import LLMReply

# ---- LongMemEval (official prompts) -------------------------------------------------------
_LME_INTRO = "I will give you a question, a correct answer, and a response from a model. "
_LME_CONTAINS = "Please answer yes if the response contains the correct answer. Otherwise, answer no. "
_LME_STEPS = (
    "If the response is equivalent to the correct answer or contains all the intermediate steps to "
    "get the correct answer, you should also answer yes. If the response only contains a subset of "
    "the information required by the answer, answer no. "
)
_LME_TAIL = (
    "\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\n"
    "Is the model response correct? Answer yes or no only."
)
LME_PROMPT_DEFAULT = _LME_INTRO + _LME_CONTAINS + _LME_STEPS + _LME_TAIL
LME_PROMPT_TEMPORAL = (
    _LME_INTRO
    + _LME_CONTAINS
    + _LME_STEPS
    + "In addition, do not penalize off-by-one errors for the number of days. If the question asks "
    "for the number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., "
    "predicting 19 days when the answer is 18), the model's response is still correct. " + _LME_TAIL
)
LME_PROMPT_KNOWLEDGE_UPDATE = (
    _LME_INTRO + _LME_CONTAINS + "If the response contains some previous information along with an updated answer, the "
    "response should be considered as correct as long as the updated answer is the required answer." + _LME_TAIL
)
LME_PROMPT_PREFERENCE = (
    "I will give you a question, a rubric for desired personalized response, and a response from a "
    "model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. "
    "The model does not need to reflect all the points in the rubric. The response is correct as "
    "long as it recalls and utilizes the user's personal information correctly."
    "\n\nQuestion: {}\n\nRubric: {}\n\nModel Response: {}\n\n"
    "Is the model response correct? Answer yes or no only."
)
LME_PROMPT_ABSTENTION = (
    "I will give you an unanswerable question, an explanation, and a response from a model. Please "
    "answer yes if the model correctly identifies the question as unanswerable. The model could say "
    "that the information is incomplete, or some other information is given but the asked "
    "information is not."
    "\n\nQuestion: {}\n\nExplanation: {}\n\nModel Response: {}\n\n"
    "Does the model correctly identify the question as unanswerable? Answer yes or no only."
)
LME_PROMPTS: dict[str, str] = {
    "single-session-user": LME_PROMPT_DEFAULT,
    "single-session-assistant": LME_PROMPT_DEFAULT,
    "multi-session": LME_PROMPT_DEFAULT,
    "temporal-reasoning": LME_PROMPT_TEMPORAL,
    "knowledge-update": LME_PROMPT_KNOWLEDGE_UPDATE,
    "single-session-preference": LME_PROMPT_PREFERENCE,
}
LME_MAX_TOKENS = 10


def get_anscheck_prompt(task: str, question: str, answer: str, response: str, abstention: bool) -> str:
    """The official judge prompt for a question type (abstention overrides the type)."""
    if abstention:
        return LME_PROMPT_ABSTENTION.format(question, answer, response)
    if task not in LME_PROMPTS:
        raise ValueError(f"unknown LongMemEval question_type {task!r}; known: {sorted(LME_PROMPTS)}")
    return LME_PROMPTS[task].format(question, answer, response)


_YES_NO_FIRST = re.compile(r"^[\s*\"'`]*(yes|no)(?=$|[\s*\"'`.,:;!])", re.IGNORECASE)


def parse_yes_no(reply: str | None) -> bool | None:
    """True/False for a clear yes/no: the first word is yes or no and the other never appears as a
    word ("Yes.", "no", "**Yes**, it matches" parse; "", "Maybe", "Yes or no", "The answer: yes"
    do not). None = not a clear label."""
    if not reply:
        return None
    match = _YES_NO_FIRST.match(reply)
    if match is None:
        return None
    label = match.group(1).lower()
    other = "no" if label == "yes" else "yes"
    if re.search(rf"\b{other}\b", reply, re.IGNORECASE):
        return None
    return label == "yes"


def lme_official_llm_judge(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    q = inp.question
    abstention = is_lme_abstention(q)  # routed first, as the official script does
    prompt = get_anscheck_prompt(q.type_raw, q.question, lme_gold(q), inp.prediction or "", abstention)
    reply = _chat(ctx, prompt, LME_MAX_TOKENS)
    label = parse_yes_no(reply.text)
    if label is None:
        raise JudgeFailed(f"judge reply is not a clear yes/no: {reply.text!r:.200}")
    task = "abstention" if abstention else q.type_raw
    return _verdict(label, reply, {"prompt_type": task, "reply": reply.text})


# ---- LoCoMo (mem0-style) --------------------------------------------------------------------
LOCOMO_JUDGE_PROMPT = """
Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given the following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT.

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label".
"""  # noqa: E501 - prompt text kept line-for-line
LOCOMO_ADVERSARIAL_GOLD = "Not mentioned in the conversation"
LOCOMO_JUDGE_MAX_TOKENS = 256

_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_BARE_LABEL = re.compile(r"[\s*\"'`]*(correct|wrong)[\s*\"'`.!]*", re.IGNORECASE)
_UPPER_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")


def parse_correct_wrong(reply: str | None) -> bool | None:
    """True/False from a CORRECT/WRONG reply; None when the label is missing or ambiguous.

    Order: the last JSON object with a "label" key decides (its value must be CORRECT or WRONG,
    any case); else a reply that is only the label; else exactly one of the upper-case words
    CORRECT / WRONG appears. Anything else (both, neither, another label) is not a verdict.
    """
    if not reply:
        return None
    for blob in reversed(_JSON_OBJECT.findall(reply)):
        try:
            obj: Any = json.loads(blob)
        except ValueError:
            continue
        if isinstance(obj, dict) and "label" in obj:
            label = str(obj["label"]).strip().upper()
            return {"CORRECT": True, "WRONG": False}.get(label)
    bare = _BARE_LABEL.fullmatch(reply)
    if bare:
        return bare.group(1).upper() == "CORRECT"
    found = set(_UPPER_LABEL.findall(reply))
    return found == {"CORRECT"} if len(found) == 1 else None


def locomo_judge_gold(inp: JudgeInput) -> str:
    q = inp.question
    if category(q) == CAT_ADVERSARIAL:
        return LOCOMO_ADVERSARIAL_GOLD
    if q.answer is None:
        raise ValueError(f"question {q.question_id!r} (record {q.record_index}): field 'answer' is null")
    return q.answer


def locomo_llm_judge(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    gold = locomo_judge_gold(inp)
    prompt = LOCOMO_JUDGE_PROMPT.format(
        question=inp.question.question, gold_answer=gold, generated_answer=inp.prediction or ""
    )
    reply = _chat(ctx, prompt, LOCOMO_JUDGE_MAX_TOKENS)
    label = parse_correct_wrong(reply.text)
    if label is None:
        raise JudgeFailed(f"judge reply is not a clear CORRECT/WRONG: {reply.text!r:.200}")
    return _verdict(label, reply, {"gold": gold, "reply": reply.text})


# ---- shared -------------------------------------------------------------------------------
def _chat(ctx: JudgeContext, prompt: str, max_tokens: int) -> LLMReply:
    if ctx.llm is None:
        raise JudgeFailed("this judge needs an LLM and none is configured")
    reply = ctx.llm.chat(
        [{"role": "user", "content": prompt}],
        model=ctx.params.get("model"),
        temperature=0.0,
        max_tokens=max_tokens,
    )
    if not reply.ok:
        raise JudgeFailed(f"judge LLM call failed ({reply.model}): {reply.error}")
    return reply


def _verdict(label: bool, reply: LLMReply, details: dict[str, Any]) -> Verdict:
    return Verdict(
        correct=label,
        score=float(label),
        details={**details, "judge_model": reply.model},
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        cache_hit=reply.cache_hit,
    )


register(
    JudgeSpec(
        metric=METRIC_LME_OFFICIAL_LLM_JUDGE,
        kinds=frozenset({KIND_LONGMEMEVAL}),
        fn=lme_official_llm_judge,
        description="official LongMemEval LLM judge (evaluate_qa.py prompts per question type; "
        "'_abs' -> abstention prompt); reply must be a clear yes/no",
        aggregate=AGG_ACCURACY,
        version="1",
        needs_llm=True,
        allowed_params=frozenset({"model"}),
        fingerprint=text_fingerprint(*LME_PROMPTS.values(), LME_PROMPT_ABSTENTION, str(LME_MAX_TOKENS)),
    )
)
register(
    JudgeSpec(
        metric=METRIC_LOCOMO_LLM_JUDGE,
        kinds=frozenset({KIND_LOCOMO}),
        fn=locomo_llm_judge,
        description="mem0-style LoCoMo LLM judge (CORRECT/WRONG; cat 5 gold 'Not mentioned in the conversation')",
        aggregate=AGG_ACCURACY,
        version="1",
        needs_llm=True,
        allowed_params=frozenset({"model"}),
        fingerprint=text_fingerprint(LOCOMO_JUDGE_PROMPT, LOCOMO_ADVERSARIAL_GOLD, str(LOCOMO_JUDGE_MAX_TOKENS)),
    )
)
