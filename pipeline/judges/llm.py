"""LLM judges: LongMemEval's official answer check, mem0's LoCoMo judge (exact and strict) and a
mem0-style LoCoMo judge.

``lme_official_llm_judge``: the prompts of LongMemEval's ``src/evaluation/evaluate_qa.py``
(``get_anscheck_prompt``, MIT licence), one per question type; abstention is decided by the
question id ending in "_abs" BEFORE the type. Call settings as the official script: one user
message, temperature 0, max_tokens 10. The reply is read as the official script reads it
(``reading: official``, the default of this preset): correct iff ``'yes' in reply.lower()``, so
"Answer: Yes" and "The answer is yes." are correct, "no, not yes" is correct too, and an empty
reply is wrong (never a failure). ``reading: strict`` is membench's reading: the reply must be a
clear yes or no (``parse_yes_no``), anything else is a FAILED judgment retried next run.

``lme_llm_judge``: the same prompts and call, membench's judge; its default reading is ``strict``
(``reading: official`` selects the official one). Its rows are never labelled official.

``locomo_llm_judge``: mem0's LoCoMo ``ACCURACY_PROMPT`` (the exact protocol text of
``mem0_locomo_judge``; generous on wording and date formats), temperature 0. The label is read
from the JSON ``{"label": ...}`` the prompt asks for (or a reply that names exactly one of
CORRECT/WRONG); anything else is a FAILED judgment. mem0 skipped category 5; here its gold is
LoCoMo's own adversarial option "Not mentioned in the conversation".

``mem0_locomo_judge``: mem0's LoCoMo judge exactly (mem0ai/mem0 ``evaluation/metrics/llm_judge.py``,
Apache-2.0, at commit 2352a44): its ``ACCURACY_PROMPT`` byte for byte (curly quotes and trailing
spaces included), one user message, ``response_format={"type": "json_object"}``, temperature 0,
model gpt-4o-mini unless the config names another, label = ``json.loads(extract_json(reply))
["label"]`` and 1 iff it equals "CORRECT" (any other label is 0, as in mem0); category 5 is skipped
(verdict null, excluded), so LoCoMo's 1,986 questions give a denominator of 1,540. ``extract_json``
is mem0's final one (``reading: final``, the default: a fenced block, else the first "{" to the
last "}"); ``reading: pinned`` is the one at commit 2352a44 (a fenced block, else the whole reply).
A reply that is not JSON with a "label" key (mem0's script would crash) is an unparseable verdict.
Deviation: max_tokens is the llm block's (mem0 sends none).

``mem0_locomo_judge_strict`` (membench's variant, not published): the same protocol with the two
"be generous" instructions replaced by strict ones (same answer or an exact equivalent; vague,
partial or merely on-topic answers are WRONG), and the label must be exactly CORRECT or WRONG.

Every judge goes through the LLM resource, so judgments are cached like answers (model, prompt,
params). A reply that holds no verdict is discarded from that cache (pipeline.llm.cache.
discard_reply) and raises UnparseableVerdict: the judgment fails now and is asked again next run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pipeline.judges.base import (
    AGG_ACCURACY,
    KIND_LOCOMO,
    KIND_LONGMEMEVAL,
    METRIC_LME_LLM_JUDGE,
    METRIC_LME_OFFICIAL_LLM_JUDGE,
    METRIC_LOCOMO_LLM_JUDGE,
    METRIC_MEM0_LOCOMO_JUDGE,
    METRIC_MEM0_LOCOMO_JUDGE_STRICT,
    JudgeContext,
    JudgeInput,
    JudgeSpec,
    Verdict,
    text_fingerprint,
)
from pipeline.judges.calls import judge_chat, unparseable
from pipeline.judges.lme import is_lme_abstention, lme_gold
from pipeline.judges.locomo import CAT_ADVERSARIAL, category
from pipeline.llm.protocol import LLMReply

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
# evaluate_qa.py's default metric model ('gpt-4o' in its model_zoo); recorded, not forced: the
# judge uses the config's model (params.model, else the llm block's)
LME_OFFICIAL_JUDGE_MODEL = "gpt-4o-2024-08-06"


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


READING_OFFICIAL = "official"  # evaluate_qa.py: label = 'yes' in reply.lower()
READING_STRICT = "strict"  # membench: a clear yes/no (parse_yes_no), else a failed judgment
LmeReading = Literal["official", "strict"]


class LmeJudgeParams(BaseModel):
    """Params of the LongMemEval LLM judges: the judge model and how its reply is read."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str | None = None
    reading: LmeReading | None = None


def yes_anywhere(reply: str | None) -> bool:
    """LongMemEval's reading of a judge reply (evaluate_qa.py): correct iff "yes" occurs anywhere
    in the lower-cased reply. Never unclear: an empty or missing reply is simply wrong."""
    return "yes" in (reply or "").lower()


def read_lme_reply(reply: str | None, reading: str) -> bool | None:
    """The label under ``reading`` (None = not a clear label, only possible when strict)."""
    if reading == READING_OFFICIAL:
        return yes_anywhere(reply)
    if reading == READING_STRICT:
        return parse_yes_no(reply)
    raise ValueError(f"unknown LongMemEval judge reading {reading!r}; known: {READING_OFFICIAL!r}, {READING_STRICT!r}")


def _lme_judge(inp: JudgeInput, ctx: JudgeContext, default_reading: str) -> Verdict:
    q = inp.question
    abstention = is_lme_abstention(q)  # routed first, as the official script does
    prompt = get_anscheck_prompt(q.type_raw, q.question, lme_gold(q), inp.prediction or "", abstention)
    reading = ctx.params.get("reading") or default_reading
    # the official script reads an empty reply as "no": a verdict, not a failed call
    reply = _chat(ctx, prompt, LME_MAX_TOKENS, empty_is_reply=reading == READING_OFFICIAL)
    label = read_lme_reply(reply.text, reading)
    if label is None:
        raise _unparseable(reply, "not a clear yes/no")
    task = "abstention" if abstention else q.type_raw
    details = {
        "prompt_type": task,
        "reply": reply.text,
        "reading": reading,
        "official_judge_model": LME_OFFICIAL_JUDGE_MODEL,
    }
    return _verdict(label, reply, details)


def lme_official_llm_judge(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    """The official preset: the reply is read as evaluate_qa.py reads it unless ``reading: strict``."""
    return _lme_judge(inp, ctx, READING_OFFICIAL)


def lme_llm_judge(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    """membench's judge on the official prompts: strict reading unless ``reading: official``."""
    return _lme_judge(inp, ctx, READING_STRICT)


# ---- LoCoMo (mem0-style) --------------------------------------------------------------------
# the prompt is mem0's own (MEM0_ACCURACY_PROMPT below, protocol text); what makes this judge
# membench's is its category-5 gold and its stricter reading of the reply
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
    prompt = MEM0_ACCURACY_PROMPT.format(
        question=inp.question.question, gold_answer=gold, generated_answer=inp.prediction or ""
    )
    reply = _chat(ctx, prompt, LOCOMO_JUDGE_MAX_TOKENS)
    label = parse_correct_wrong(reply.text)
    if label is None:
        raise _unparseable(reply, "not a clear CORRECT/WRONG")
    return _verdict(label, reply, {"gold": gold, "reply": reply.text})


# ---- LoCoMo (mem0's judge, exactly) --------------------------------------------------------------
# mem0ai/mem0 evaluation/metrics/llm_judge.py ACCURACY_PROMPT (Apache-2.0), byte for byte: the
# quotes are U+2019 and four lines end in a space.
_MEM0_TEMPLATE = (
    "\nYour task is to label an answer to a question as \u2019CORRECT\u2019 or \u2019WRONG\u2019. You will be "
    "given the following data:\n    (1) a question (posed by one user to another user), \n    (2) a "
    "\u2019gold\u2019 (ground truth) answer, \n    (3) a generated answer\nwhich you will score as "
    "CORRECT/WRONG.\n\nThe point of the question is to "
    "ask about something one user should know about the other user based on their prior conversations.\nThe gold "
    "answer will usually be a concise and short answer that includes the referenced topic, for example:\nQuestion: "
    "Do you remember what I got the last time I went to Hawaii?\nGold answer: A shell necklace\n"
    "{generous_topic}\n\n"
    "For time related questions, the gold answer will be a specific date, month, year, etc. {generous_time} Even if "
    'the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it\'s the same date.\n\nNow it\'s '
    "time for the real question:\nQuestion: {{question}}\nGold answer: {{gold_answer}}\nGenerated answer: "
    "{{generated_answer}}\n\nFirst, provide a short (one sentence) explanation of your reasoning, then finish with "
    "CORRECT or WRONG. \nDo NOT include both CORRECT and WRONG in your response, or it will break the evaluation "
    'script.\n\nJust return the label CORRECT or WRONG in a json format with the key as "label".\n'
)
_MEM0_GENEROUS_TOPIC = (
    "The generated answer might be much longer, but you should be generous with your grading - as "
    "long as it touches on the same topic as the gold answer, it should be counted as CORRECT. "
)
_MEM0_GENEROUS_TIME = (
    'The generated answer might be much longer or use relative time references (like "last '
    'Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the '
    "same date or time period as the gold answer, it should be counted as CORRECT."
)
MEM0_ACCURACY_PROMPT = _MEM0_TEMPLATE.format(generous_topic=_MEM0_GENEROUS_TOPIC, generous_time=_MEM0_GENEROUS_TIME)
# the strict variant (membench's words): mem0's prompt with its two "be generous" instructions replaced
MEM0_STRICT_PROMPT = _MEM0_TEMPLATE.format(
    generous_topic="Grade strictly: the generated answer is CORRECT only if it states the gold answer or an exact "
    "equivalent. It is WRONG if it is vague, only touches on the same topic, omits part of the gold answer, or adds "
    "information that contradicts it. ",
    generous_time="The generated answer is CORRECT only if it names the same date or time period as precisely as the "
    'gold answer; a relative time reference (like "last Tuesday") that is not resolved to that date is WRONG.',
)
MEM0_JUDGE_MODEL = "gpt-4o-mini"
MEM0_RESPONSE_FORMAT: Mapping[str, Any] = {"type": "json_object"}
_MEM0_CODE_BLOCK = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)

# How a mem0 judge reply is read (``params.reading``). Both are mem0's own ``extract_json``
# (mem0/memory/utils.py), at two points of its history:
# - ``final`` (default): its last version before the evaluation folder left the repository
#   (mem0ai/mem0 b3ede5b, changed in 2a59c9f): the body of a fenced block; else, when the reply
#   has a "{" before a later "}", the text from the first "{" to the last "}"; else the reply.
#   So 'Reasoning. {"label": "CORRECT"}' is read as CORRECT.
# - ``pinned``: the version at the pinned commit 2352a44: the body of a fenced block, else the
#   whole reply (a reply with prose around its JSON is not JSON: mem0's script crashed on it,
#   membench fails the judgment as an unparseable verdict).
MEM0_READING_FINAL = "final"
MEM0_READING_PINNED = "pinned"
Mem0Reading = Literal["final", "pinned"]


class Mem0JudgeParams(BaseModel):
    """Params of mem0's LoCoMo judges: the judge model and which ``extract_json`` reads the reply."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str | None = None
    reading: Mem0Reading | None = None


def mem0_extract_json(text: str, reading: str = MEM0_READING_FINAL) -> str:
    """What mem0's ``extract_json`` yields under ``reading`` (behaviour implemented here, see above)."""
    text = text.strip()
    match = _MEM0_CODE_BLOCK.search(text)
    if match:
        return match.group(1)
    if reading == MEM0_READING_PINNED:
        return text
    if reading != MEM0_READING_FINAL:
        known = f"{MEM0_READING_FINAL!r}, {MEM0_READING_PINNED!r}"
        raise ValueError(f"unknown mem0 judge reading {reading!r}; known: {known}")
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else text


def mem0_label(reply: str | None, reading: str = MEM0_READING_FINAL) -> str | None:
    """The "label" value as mem0 reads it (``json.loads(extract_json(reply))["label"]``), or None
    where mem0's script would crash (not JSON, not an object, no "label" key)."""
    if not reply:
        return None
    try:
        obj: Any = json.loads(mem0_extract_json(reply, reading))
    except ValueError:
        return None
    if not isinstance(obj, dict) or "label" not in obj:
        return None
    return obj["label"] if isinstance(obj["label"], str) else json.dumps(obj["label"])


def _mem0_judge(inp: JudgeInput, ctx: JudgeContext, prompt_template: str, strict: bool) -> Verdict:
    q = inp.question
    if category(q) == CAT_ADVERSARIAL:  # mem0 skips category 5: not scored, not in the denominator
        return Verdict(None, None, {"skipped": "category 5 (mem0 protocol)"})
    if q.answer is None:
        raise ValueError(f"question {q.question_id!r} (record {q.record_index}): field 'answer' is null")
    prompt = prompt_template.format(
        question=str(q.question), gold_answer=str(q.answer), generated_answer=str(inp.prediction or "")
    )
    reply = _chat(ctx, prompt, None, params={"response_format": dict(MEM0_RESPONSE_FORMAT)})
    reading = ctx.params.get("reading") or MEM0_READING_FINAL
    label = mem0_label(reply.text, reading)
    if label is None or (strict and label not in ("CORRECT", "WRONG")):
        raise _unparseable(reply, 'no JSON "label" CORRECT/WRONG' if strict else 'no JSON "label"')
    details = {"label": label, "reply": reply.text, "reading": reading, "official_judge_model": MEM0_JUDGE_MODEL}
    return _verdict(label == "CORRECT", reply, details)


def mem0_locomo_judge(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    return _mem0_judge(inp, ctx, MEM0_ACCURACY_PROMPT, strict=False)


def mem0_locomo_judge_strict(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    return _mem0_judge(inp, ctx, MEM0_STRICT_PROMPT, strict=True)


# ---- shared -------------------------------------------------------------------------------
def _chat(
    ctx: JudgeContext,
    prompt: str,
    max_tokens: int | None,
    *,
    params: Mapping[str, Any] | None = None,
    empty_is_reply: bool = False,
) -> LLMReply:
    """The judge's one call: ``prompt`` as one user message (pipeline.judges.calls.judge_chat)."""
    messages = [{"role": "user", "content": prompt}]
    return judge_chat(ctx, messages, max_tokens, params=params, empty_is_reply=empty_is_reply)


_unparseable = unparseable


def _verdict(label: bool, reply: LLMReply, details: dict[str, Any]) -> Verdict:
    return Verdict(
        correct=label,
        score=float(label),
        details={**details, "judge_model": reply.model},
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        cache_hit=reply.cache_hit,
    )


_LME_FINGERPRINT = text_fingerprint(*LME_PROMPTS.values(), LME_PROMPT_ABSTENTION, str(LME_MAX_TOKENS))


def _lme_spec(metric: str, fn: Any, description: str, version: str, official_model: str | None) -> JudgeSpec:
    """The two LongMemEval LLM judges share prompts, params and fingerprint; they differ in reading."""
    return JudgeSpec(
        metric=metric,
        kinds=frozenset({KIND_LONGMEMEVAL}),
        fn=fn,
        description=description,
        aggregate=AGG_ACCURACY,
        version=version,
        needs_llm=True,
        allowed_params=frozenset({"model", "reading"}),
        fingerprint=_LME_FINGERPRINT,
        official_model=official_model,
        params_model=LmeJudgeParams,
    )


LME_OFFICIAL_LLM_JUDGE = _lme_spec(
    METRIC_LME_OFFICIAL_LLM_JUDGE,
    lme_official_llm_judge,
    "official LongMemEval LLM judge (evaluate_qa.py prompts per question type; '_abs' -> abstention prompt); "
    "reply read as the official script: correct iff 'yes' in reply.lower() (params.reading: strict = a clear "
    "yes/no or a failed judgment)",
    version="2",
    official_model=LME_OFFICIAL_JUDGE_MODEL,
)
LME_LLM_JUDGE = _lme_spec(
    METRIC_LME_LLM_JUDGE,
    lme_llm_judge,
    "membench's LongMemEval LLM judge: the official prompts, reply must be a clear yes/no (else a failed "
    "judgment, retried); params.reading: official = 'yes' in reply.lower()",
    version="1",
    official_model=None,
)
LOCOMO_LLM_JUDGE = JudgeSpec(
    metric=METRIC_LOCOMO_LLM_JUDGE,
    kinds=frozenset({KIND_LOCOMO}),
    fn=locomo_llm_judge,
    description="mem0-style LoCoMo LLM judge (CORRECT/WRONG; cat 5 gold 'Not mentioned in the conversation')",
    aggregate=AGG_ACCURACY,
    version="2",  # 2: mem0's exact prompt text (version 1 was a copy with straight quotes)
    needs_llm=True,
    allowed_params=frozenset({"model"}),
    fingerprint=text_fingerprint(MEM0_ACCURACY_PROMPT, LOCOMO_ADVERSARIAL_GOLD, str(LOCOMO_JUDGE_MAX_TOKENS)),
)
MEM0_LOCOMO_JUDGE = JudgeSpec(
    metric=METRIC_MEM0_LOCOMO_JUDGE,
    kinds=frozenset({KIND_LOCOMO}),
    fn=mem0_locomo_judge,
    description="mem0's LoCoMo LLM judge exactly (its ACCURACY_PROMPT bytes, JSON response format, "
    "the configured judge model unless params.model (mem0's evaluation used gpt-4o-mini); label CORRECT -> 1, "
    "any other label 0; category 5 skipped: denominator 1,540 on LoCoMo); reply read by mem0's final "
    "extract_json (first '{' to last '}'), params.reading: pinned = the pinned commit's (fenced block or the "
    "whole reply)",
    aggregate=AGG_ACCURACY,
    version="2",  # 2: mem0's final reading of the reply (version 1 read it as the pinned commit)
    needs_llm=True,
    allowed_params=frozenset({"model", "reading"}),
    fingerprint=text_fingerprint(MEM0_ACCURACY_PROMPT, json.dumps(MEM0_RESPONSE_FORMAT), "skip-5"),
    official_model=MEM0_JUDGE_MODEL,
    llm_fields=("model", "max_tokens", "model_tag"),  # its calls set no reply cap: the endpoint's applies
    params_model=Mem0JudgeParams,
)
MEM0_LOCOMO_STRICT_JUDGE = JudgeSpec(
    metric=METRIC_MEM0_LOCOMO_JUDGE_STRICT,
    kinds=frozenset({KIND_LOCOMO}),
    fn=mem0_locomo_judge_strict,
    description="strict variant of mem0's LoCoMo judge (membench's, unpublished): its prompt without the two "
    "'be generous' instructions (same answer or exact equivalent required), label exactly CORRECT/WRONG; "
    "otherwise as mem0_locomo_judge (JSON format, category 5 skipped, params.reading)",
    aggregate=AGG_ACCURACY,
    version="2",  # 2: mem0's final reading of the reply
    needs_llm=True,
    allowed_params=frozenset({"model", "reading"}),
    fingerprint=text_fingerprint(MEM0_STRICT_PROMPT, json.dumps(MEM0_RESPONSE_FORMAT), "skip-5", "strict"),
    official_model=MEM0_JUDGE_MODEL,
    llm_fields=("model", "max_tokens", "model_tag"),  # its calls set no reply cap: the endpoint's applies
    params_model=Mem0JudgeParams,
)
