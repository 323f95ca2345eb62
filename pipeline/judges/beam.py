"""BEAM's official judges (mohammadtavakoli78/BEAM ``src/evaluation/compute_metrics.py``).

What the official evaluation does, and these judges do the same:

- every rubric item is one judge call: ``unified_llm_judge_base_prompt`` (``BEAM_JUDGE_PROMPT``,
  word for word) with ``<rubric_item>`` and then ``<llm_response>`` replaced, as one user message,
  temperature 0. Its ``<question>`` placeholder is NOT filled by the official code, so the judge
  sees the literal text "<question>"; here too (a filled question would change the protocol);
- the reply is read as ``parse_json_response`` reads it: stripped; a reply starting with a code fence
  gives the fenced ``{...}`` / ``[...]``; else the whole reply; else the first (shortest) ``{...}``
  or ``[...]`` in it; the item's value is ``reply["score"]``;
- question score (``llm_judge_score``) = sum over items / number of items, each item as
  ``int(score)`` for nine abilities, so a 0.5 counts 0 (``beam_official``), and as ``float(score)``
  for event ordering; ``beam_rubric_mean`` is the untruncated mean for every ability (membench's
  second metric, not an official figure);
- event ordering: the reply is split on newlines; each line is aligned with the first not yet used
  rubric item an LLM calls the same event (``BEAM_EQUIVALENCE_SYSTEM`` / ``BEAM_EQUIVALENCE_USER``,
  a match when "yes" is in the lower-cased reply), then Kendall tau-b and F1 of the aligned lists
  (pipeline/metrics/ordering.py): ``beam_event_ordering`` = tau_norm x F1 (``final_score``);
- the official report (``report_results.py``) averages ``tau_norm`` for event ordering and
  ``llm_judge_score`` for the nine others: that per-question value is ``beam_official``.

Deviations, deliberate: a reply the official reader cannot parse goes to ``json_repair`` there;
here it is an unparseable verdict (the judgment fails and is asked again), as is a reply whose
``score`` ``int()`` / ``float()`` cannot read (the official script crashes on it). The official
event-ordering code also asks the judge to break the reply into facts and then discards that
answer; membench does not make that call (no figure depends on it). The judge model is the
judges' endpoint's (official: gpt-4.1-mini, recorded in the details); max_tokens is the llm
block's (the official calls send none). An undefined tau-b (a constant rank vector, NaN in SciPy)
makes the question not applicable instead of a NaN average.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.core.families import BEAM_EVENT_ORDERING
from pipeline.judges.base import (
    AGG_MEAN_SCORE,
    KIND_BEAM,
    METRIC_BEAM_EVENT_ORDERING,
    METRIC_BEAM_OFFICIAL,
    METRIC_BEAM_RUBRIC_MEAN,
    JudgeContext,
    JudgeInput,
    JudgeSpec,
    Verdict,
    text_fingerprint,
)
from pipeline.judges.calls import judge_chat, unparseable
from pipeline.llm.protocol import LLMReply
from pipeline.metrics.ordering import OrderingScore, ordering_score

# ---- protocol texts (src/prompts.py and compute_metrics.py llm_equivalence, word for word) -------
BEAM_JUDGE_PROMPT = (
    "\n"
    "You are an expert evaluator tasked with judging whether the LLM's response demonstrates compliance"
    " with the specified RUBRIC CRITERION.\n"
    "\n"
    "## EVALUATION INPUTS\n"
    "- QUESTION (what the user asked): <question>\n"
    "- RUBRIC CRITERION (what to check): <rubric_item>\n"
    "- RESPONSE TO EVALUATE: <llm_response>\n"
    "\n"
    "## EVALUATION RUBRIC:\n"
    "The rubric defines a specific requirement, constraint, or expected behavior that the LLM response"
    " should demonstrate. \n"
    "\n"
    "**IMPORTANT**: Pay careful attention to whether the rubric specifies:\n"
    "- **Positive requirements** (things the response SHOULD include/do)\n"
    '- **Negative constraints** (things the response SHOULD NOT include/do, often indicated by "no",'
    ' "not", "avoid", "absent")\n'
    "\n"
    "## RESPONSIVENESS REQUIREMENT (anchored to the QUESTION)\n"
    "A compliant response must be **on-topic with respect to the QUESTION** and attempt to answer it.\n"
    "- If the response does not address the QUESTION, score **0.0** and stop.\n"
    "- For negative constraints, both must hold: (a) the response is responsive to the QUESTION, and (b)"
    " the prohibited element is absent.\n"
    "\n"
    "## SEMANTIC TOLERANCE RULES:\n"
    "Judge by meaning, not exact wording.\n"
    "- Accept **paraphrases** and **synonyms** that preserve intent.\n"
    "- **Case/punctuation/whitespace** differences must be ignored.\n"
    "- **Numbers/currencies/dates** may appear in equivalent forms (e.g., “$68,000”, “68k”, “68,000"
    " USD”, or “sixty-eight thousand dollars”). Treat them as equal when numerically equivalent.\n"
    "- If the rubric expects a number or duration, prefer **normalized comparison** (extract and compare"
    " values) over string matching.\n"
    "\n"
    "## STYLE NEUTRALITY (prevents style contamination):\n"
    "Ignore tone, politeness, length, and flourish unless the rubric explicitly requires a"
    " format/structure (e.g., “itemized list”, “no citations”, “one sentence”).\n"
    "- Do **not** penalize hedging, voice, or verbosity if content satisfies the rubric.\n"
    "- Only evaluate format when the rubric **explicitly** mandates it.\n"
    "\n"
    "## SCORING SCALE:\n"
    "- **1.0 (Complete Compliance)**: Fully complies with the rubric criterion.\n"
    "  - Positive: required element present, accurate, properly executed (allowing semantic"
    " equivalents).\n"
    "  - Negative: prohibited element **absent** AND response is **responsive**.\n"
    "  \n"
    "- **0.5 (Partial Compliance)**: Partially complies.\n"
    "  - Positive: element present but minor inaccuracies/incomplete execution.\n"
    "  - Negative: generally responsive and mostly avoids the prohibited element but with minor/edge"
    " violations.\n"
    "  \n"
    "- **0.0 (No Compliance)**: Fails to comply.\n"
    "  - Positive: required element missing or incorrect.\n"
    "  - Negative: prohibited element present **or** response is non-responsive/evasive even if the"
    " element is absent.\n"
    "\n"
    "## EVALUATION INSTRUCTIONS:\n"
    "1. **Understand the Requirement**: Determine if the rubric is asking for something to be present"
    " (positive) or absent (negative/constraint).\n"
    "\n"
    '2. **Parse Compound Statements**: If the rubric contains multiple elements connected by "and" or'
    " commas, evaluate whether:\n"
    "   - **All elements** must be present for full compliance (1.0)\n"
    "   - **Some elements** present indicates partial compliance (0.5)\n"
    "   - **No elements** present indicates no compliance (0.0)\n"
    "   \n"
    "3. **Check Compliance**: \n"
    "   - For positive requirements: Look for the presence and quality of the required element\n"
    "   - For negative constraints: Look for the absence of the prohibited element\n"
    "\n"
    "4. **Assign Score**: Based on compliance with the specific rubric criterion according to the"
    " scoring scale above.\n"
    "\n"
    "5. **Provide Reasoning**: Explain whether the rubric criterion was satisfied and justify the score.\n"
    "\n"
    "## OUTPUT FORMAT:\n"
    "Return your evaluation in JSON format with two fields:\n"
    "\n"
    "{\n"
    '   "score": [your score: 1.0, 0.5, or 0.0],\n'
    '   "reason": "[detailed explanation of whether the rubric criterion was satisfied and why this'
    ' justified the assigned score]"\n'
    "}\n"
    "\n"
    "NOTE: ONLY output the json object, without any explanation before or after that\n"
)
BEAM_EQUIVALENCE_SYSTEM = (
    "\n            You are a binary classifier.\n            If the TWO snippets describe the SAME event/fact, reply "
    "**YES**\n            Otherwise reply **NO**. No extra words.\n            DO NOT provide any exaplanation.\n"
    "        "
)
BEAM_EQUIVALENCE_USER = (
    "First snippet: {first} \n\n                       Second snippet: {second}\n                    "
)
RUBRIC_ITEM = "<rubric_item>"
RESPONSE = "<llm_response>"
BEAM_JUDGE_MODEL = "gpt-4.1-mini"  # src/llm.py gpt_llm, the evaluation's judge (recorded, not forced)

_FENCED = re.compile(r"```(?:json)?\s*(\[.*\]|\{.*\})\s*```", re.DOTALL)
_FIRST_JSON = re.compile(r"(\{.*?\}|\[.*?\])", re.DOTALL)


def rubric_prompt(item: str, response: str) -> str:
    """The judge prompt of one rubric item: ``<rubric_item>`` first, then ``<llm_response>`` (so a
    rubric item that itself holds ``<llm_response>`` gets the response too, as in the official code)."""
    return BEAM_JUDGE_PROMPT.replace(RUBRIC_ITEM, item).replace(RESPONSE, response)


def read_json_reply(text: str) -> Any | None:
    """The JSON value the official reader finds in a judge reply, None where it finds none."""
    body = text.strip()
    if body.startswith("```"):
        fenced = _FENCED.search(body)
        if fenced is not None:
            body = fenced.group(1).strip()
    try:
        return json.loads(body)
    except ValueError:
        pass
    first = _FIRST_JSON.search(body)
    if first is None:
        return None
    try:
        return json.loads(first.group(1))
    except ValueError:
        return None


def truncated(value: Any) -> float | None:
    """``int(score)`` (0.5 -> 0, "1" -> 1), None where ``int()`` fails."""
    try:
        return float(int(value))
    except (TypeError, ValueError, OverflowError):
        return None


def untruncated(value: Any) -> float | None:
    """``float(score)``, None where it fails or is not finite."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _sum_tokens(replies: Sequence[LLMReply], name: str) -> int | None:
    values = [getattr(r, name) for r in replies]
    return None if any(v is None for v in values) else sum(values)


def _verdict(score: float | None, replies: Sequence[LLMReply], details: dict[str, Any]) -> Verdict:
    models = sorted({r.model for r in replies})
    return Verdict(
        correct=None if score is None else score == 1.0,
        score=score,
        details={**details, "judge_model": ",".join(models), "n_calls": len(replies),
                 "official_judge_model": BEAM_JUDGE_MODEL},
        prompt_tokens=_sum_tokens(replies, "prompt_tokens"),
        completion_tokens=_sum_tokens(replies, "completion_tokens"),
        cache_hit=bool(replies) and all(r.cache_hit for r in replies),
    )  # fmt: skip


def _rubric(inp: JudgeInput) -> tuple[str, ...]:
    q = inp.question
    if not q.rubric:
        raise ValueError(f"question {q.question_id!r} (record {q.record_index}): field 'rubric' is empty or null")
    return q.rubric


def rubric_scores(
    inp: JudgeInput, ctx: JudgeContext, convert: Callable[[Any], float | None]
) -> tuple[list[float], list[LLMReply]]:
    """One call per rubric item, in order; each reply's ``score`` read by ``convert``."""
    scores: list[float] = []
    replies: list[LLMReply] = []
    response = inp.prediction or ""
    for item in _rubric(inp):
        reply = judge_chat(ctx, [{"role": "user", "content": rubric_prompt(item, response)}], None)
        obj = read_json_reply(reply.text or "")
        value = convert(obj["score"]) if isinstance(obj, dict) and "score" in obj else None
        if value is None:
            raise unparseable(reply, 'no JSON object with a readable "score"')
        scores.append(value)
        replies.append(reply)
    return scores, replies


def align(reference: Sequence[str], system: Sequence[str], ctx: JudgeContext) -> tuple[list[str], list[LLMReply]]:
    """Each system line replaced by the first unused reference item the judge calls the same event."""
    used: set[int] = set()
    aligned: list[str] = []
    replies: list[LLMReply] = []
    for line in system:
        match = None
        for index, item in enumerate(reference):
            if index in used:
                continue
            messages = [
                {"role": "system", "content": BEAM_EQUIVALENCE_SYSTEM},
                {"role": "user", "content": BEAM_EQUIVALENCE_USER.format(first=item, second=line)},
            ]
            reply = judge_chat(ctx, messages, None, empty_is_reply=True)
            replies.append(reply)
            if "yes" in (reply.text or "").lower():
                match = index
                break
        if match is None:
            aligned.append(line)
        else:
            aligned.append(reference[match])
            used.add(match)
    return aligned, replies


def event_ordering(inp: JudgeInput, ctx: JudgeContext) -> tuple[OrderingScore, list[str], list[LLMReply]]:
    """The aligned reply lines and their ordering figures."""
    reference = list(_rubric(inp))
    aligned, replies = align(reference, (inp.prediction or "").split("\n"), ctx)
    return ordering_score(reference, aligned), aligned, replies


def _ordering_details(score: OrderingScore, aligned: list[str]) -> dict[str, Any]:
    return {
        "ability": BEAM_EVENT_ORDERING,
        "aligned": aligned,
        "precision": score.precision,
        "recall": score.recall,
        "f1": score.f1,
        "tau_b": score.tau_b,
        "tau_norm": score.tau_norm,
        "final_score": score.final_score,
        **({} if score.tau_b is not None else {"undefined": "tau-b of a constant rank vector (NaN officially)"}),
    }


def beam_official(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    """What report_results.py averages: tau_norm for event ordering, the int()-truncated rubric mean else."""
    ability = inp.question.type_raw
    if ability == BEAM_EVENT_ORDERING:
        score, aligned, replies = event_ordering(inp, ctx)
        return _verdict(score.tau_norm, replies, {**_ordering_details(score, aligned), "value": "tau_norm"})
    scores, replies = rubric_scores(inp, ctx, truncated)
    details = {"ability": ability, "item_scores": scores, "replies": [r.text for r in replies], "value": "int() mean"}
    return _verdict(sum(scores) / len(scores), replies, details)


def beam_rubric_mean(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    """The untruncated rubric mean (the official llm_judge_score of event ordering; membench's for the rest)."""
    scores, replies = rubric_scores(inp, ctx, untruncated)
    details = {"ability": inp.question.type_raw, "item_scores": scores, "replies": [r.text for r in replies]}
    return _verdict(sum(scores) / len(scores), replies, details)


def beam_event_ordering(inp: JudgeInput, ctx: JudgeContext) -> Verdict:
    """compute_metrics.py's final_score = tau_norm x F1 (event-ordering questions only)."""
    if inp.question.type_raw != BEAM_EVENT_ORDERING:
        return Verdict(None, None, {"skipped": "not an event-ordering question"})
    score, aligned, replies = event_ordering(inp, ctx)
    return _verdict(score.final_score, replies, _ordering_details(score, aligned))


_RUBRIC_FINGERPRINT = text_fingerprint(BEAM_JUDGE_PROMPT, RUBRIC_ITEM, RESPONSE, _FENCED.pattern, _FIRST_JSON.pattern)
_ALIGN_FINGERPRINT = text_fingerprint(BEAM_EQUIVALENCE_SYSTEM, BEAM_EQUIVALENCE_USER, "yes-in-lower")


def _spec(metric: str, fn: Any, description: str, fingerprint: str) -> JudgeSpec:
    return JudgeSpec(
        metric=metric,
        kinds=frozenset({KIND_BEAM}),
        fn=fn,
        description=description,
        aggregate=AGG_MEAN_SCORE,
        version="1",
        needs_llm=True,
        allowed_params=frozenset({"model"}),
        fingerprint=fingerprint,
        official_model=BEAM_JUDGE_MODEL,
        llm_fields=("model", "max_tokens", "model_tag"),  # its calls set no reply cap: the endpoint's applies
    )


BEAM_OFFICIAL_JUDGE = _spec(
    METRIC_BEAM_OFFICIAL,
    beam_official,
    "BEAM's official per-question value (compute_metrics.py, as report_results.py averages it): event ordering "
    "tau_norm after LLM alignment; every other ability the mean of int(score) over its rubric items (0.5 -> 0)",
    text_fingerprint(_RUBRIC_FINGERPRINT, _ALIGN_FINGERPRINT, "int"),
)
BEAM_RUBRIC_MEAN_JUDGE = _spec(
    METRIC_BEAM_RUBRIC_MEAN,
    beam_rubric_mean,
    "BEAM rubric judge, untruncated: mean of float(score) 0 / 0.5 / 1 over the rubric items, every ability "
    "(the official llm_judge_score of event ordering; membench's for the other nine)",
    text_fingerprint(_RUBRIC_FINGERPRINT, "float"),
)
BEAM_EVENT_ORDERING_JUDGE = _spec(
    METRIC_BEAM_EVENT_ORDERING,
    beam_event_ordering,
    "BEAM event ordering (compute_metrics.py final_score): Kendall tau-b normalised x F1 of the reply's lines "
    "aligned with the rubric items by the official LLM alignment; other abilities not applicable",
    _ALIGN_FINGERPRINT,
)
