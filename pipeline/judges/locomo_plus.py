"""LoCoMo-Plus's judge (xjtuleeyf/Locomo-Plus ``evaluation_framework/task_eval/llm_as_judge.py``).

The official protocol, for its "Cognitive" items: the ``Cognitive`` template of ``prompt.py``
(``LOCOMO_PLUS_JUDGE_PROMPT``, word for word) filled with the evidence (the cue dialogue, which the
loader keeps as ``questions.answer``) and the model's prediction, one user message, temperature 0,
512 tokens; the label is read from the reply and scored correct = 1, partial = 0.5, wrong = 0.

Reading the reply (``reading: official``, the default): a ``{... "label": "<x>" ... "reason":
"<y>" ...}`` object found by the official pattern gives the label; else the reply parsed as JSON
gives its ``label``; and if that raises (not JSON, not an object, a label that is not text), the
first of "correct", "wrong", "partial" found in the lower-cased reply (so "incorrect" reads as
"correct", as it does officially). Any other label (none, or an unknown word) scores 0, as
officially: a verdict, not a failure. ``reading: strict`` (membench's) accepts only a label
correct / partial / wrong from the pattern or the JSON; anything else is an unparseable verdict,
retried. Deviation: a failed call fails the judgment (the official script judges the text
"[API Error: ...]" and scores it 0).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pipeline.judges.base import (
    AGG_MEAN_SCORE,
    KIND_LOCOMO_PLUS,
    METRIC_LOCOMO_PLUS_JUDGE,
    JudgeContext,
    JudgeInput,
    JudgeSpec,
    Verdict,
    text_fingerprint,
)
from pipeline.judges.calls import judge_chat, unparseable

LOCOMO_PLUS_JUDGE_PROMPT = (
    "\n"
    "You are a Memory Awareness Judge.\n"
    "Your task: Judge whether the Model Prediction considers or is linked to the Evidence. If there is a"
    " clear connection, the answer is correct (score 1); if not, it is wrong (no score).\n"
    "\n"
    "Labels:\n"
    '- "correct": The prediction explicitly or implicitly reflects/uses the evidence (memory or'
    " constraint). Give 1 point.\n"
    '- "wrong": The prediction does not show such a link to the evidence. No point.\n'
    "\n"
    "Memory/Evidence:\n"
    "{evidence}\n"
    "\n"
    "Model Prediction:\n"
    "{pred}\n"
    "\n"
    "Return your judgment strictly in JSON format:\n"
    '{{"label": "correct"|"wrong", "reason": "<Does the prediction relate to the evidence?>"}}\n'
)
LOCOMO_PLUS_JUDGE_MODEL = "gpt-4o-mini"  # judge.sh's default (recorded, not forced)
LOCOMO_PLUS_JUDGE_MAX_TOKENS = 512  # llm_as_judge.py --max-tokens default
LABEL_SCORES: dict[str, float] = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}
FALLBACK_ORDER = ("correct", "wrong", "partial")  # the order the official fallback looks for them
_LABEL_AND_REASON = re.compile(
    r"\{[^{}]*\"label\"\s*:\s*[\"']([^\"']+)[\"'][^{}]*\"reason\"\s*:\s*[\"']([^\"']*)[\"']", re.DOTALL
)
READING_OFFICIAL = "official"
READING_STRICT = "strict"


class LocomoPlusJudgeParams(BaseModel):
    """The judge model and how its reply is read."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str | None = None
    reading: Literal["official", "strict"] | None = None


def judge_prompt(evidence: str, prediction: str) -> str:
    return LOCOMO_PLUS_JUDGE_PROMPT.format(evidence=evidence, pred=prediction)


def _structured_label(text: str) -> str:
    """The label from the pattern, else from the JSON object; raises where the official reader falls back."""
    found = _LABEL_AND_REASON.search(text)
    if found is not None:
        return found.group(1).strip()
    obj: Any = json.loads(text)
    label = obj.get("label") or ""  # AttributeError on a non-object: the fallback
    (obj.get("reason") or "").strip()  # the official reader also strips the reason: a non-text one falls back
    return label.strip()  # AttributeError on a non-text label: the fallback


def label_official(reply: str | None) -> str:
    """The label as llm_as_judge.py reads it ("" when it finds none)."""
    text = (reply or "").strip()
    try:
        return _structured_label(text)
    except Exception:  # the official reader falls back on ANY error of the structured read
        lowered = text.lower()
        return next((word for word in FALLBACK_ORDER if word in lowered), "")


def label_strict(reply: str | None) -> str | None:
    """A label correct / partial / wrong from the pattern or the JSON object, else None."""
    try:
        label = _structured_label((reply or "").strip()).lower()
    except (ValueError, AttributeError):
        return None
    return label if label in LABEL_SCORES else None


def locomo_plus_judge(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    q = inp.question
    if q.answer is None:
        raise ValueError(f"question {q.question_id!r} (record {q.record_index}): field 'answer' (the evidence) is null")
    reading = ctx.params.get("reading") or READING_OFFICIAL
    messages = [{"role": "user", "content": judge_prompt(q.answer, inp.prediction or "")}]
    reply = judge_chat(ctx, messages, LOCOMO_PLUS_JUDGE_MAX_TOKENS, empty_is_reply=reading == READING_OFFICIAL)
    if reading == READING_STRICT:
        strict = label_strict(reply.text)
        if strict is None:
            raise unparseable(reply, "no label correct / partial / wrong")
        label = strict
    else:
        label = label_official(reply.text)
    score = LABEL_SCORES.get(label.strip().lower(), 0.0)
    details = {
        "label": label,
        "reply": reply.text,
        "reading": reading,
        "judge_model": reply.model,
        "official_judge_model": LOCOMO_PLUS_JUDGE_MODEL,
    }
    return Verdict(
        score == 1.0,
        score,
        details,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        cache_hit=reply.cache_hit,
    )


LOCOMO_PLUS_JUDGE = JudgeSpec(
    metric=METRIC_LOCOMO_PLUS_JUDGE,
    kinds=frozenset({KIND_LOCOMO_PLUS}),
    fn=locomo_plus_judge,
    description="LoCoMo-Plus's judge (llm_as_judge.py, Cognitive template): does the reply connect to the cue "
    "dialogue; correct 1 / partial 0.5 / wrong 0, the reply read as the official script reads it "
    "(params.reading: strict = a clear label or a failed judgment)",
    aggregate=AGG_MEAN_SCORE,
    version="1",
    needs_llm=True,
    allowed_params=frozenset({"model", "reading"}),
    fingerprint=text_fingerprint(
        LOCOMO_PLUS_JUDGE_PROMPT, _LABEL_AND_REASON.pattern, json.dumps(LABEL_SCORES), str(LOCOMO_PLUS_JUDGE_MAX_TOKENS)
    ),
    official_model=LOCOMO_PLUS_JUDGE_MODEL,
    params_model=LocomoPlusJudgeParams,
)
