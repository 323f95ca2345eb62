"""The inputs of the BEAM and LoCoMo-Plus parity tests: answers to score and FIXED judge replies.

Why fixed replies: BEAM and LoCoMo-Plus are judged by an LLM, so the official scoring code can only
be compared with membench's on the same judge replies. Here a reply is a pure function of what the
judge is asked (the prompt text, or the two snippets of an alignment call), written to look like a
judge's and to hit every reading rule: JSON, fenced JSON, JSON inside prose, integer and string
scores, a reply with no JSON at all, "YES" / "**YES**" / "no, not yes" for the alignment, labels
before and after the reason, "incorrect" for LoCoMo-Plus. The outside run feeds the same function
to the official code (as its model's ``invoke``), so both sides see the same reply for the same
request. Both sides build the answers here too; ``inputs_digest`` (tests/support/parity_inputs.py)
fingerprints them. Everything here is membench's; no scoring happens here.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BEAM_REFERENCE_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")
BEAM_EVENT_ORDERING = "event_ordering"
_WORD = re.compile(r"\w+")
_SNIPPETS = re.compile(r"^First snippet: (.*) \n\n {23}Second snippet: (.*)\n {20}$", re.DOTALL)
_STOP = frozenset(["a", "an", "the", "of", "and", "or", "to", "in", "on", "for", "with", "my", "i", "you", "your",
                   "was", "is", "are", "be", "by", "at", "from", "that", "this"])  # fmt: skip


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], 16)


@dataclass(frozen=True)
class BeamCase:
    """One probing question: ``key`` = membench's question id ``<tier>-<chat>-<ability>-<i>``."""

    key: str
    ability: str
    question: str
    rubric: tuple[str, ...]
    outputs: tuple[str, ...]


def _reference(q: Mapping[str, Any]) -> str:
    return next((str(q[f]) for f in BEAM_REFERENCE_FIELDS if q.get(f) is not None), "")


def _ordering_outputs(key: str, rubric: Sequence[str]) -> list[str]:
    """Replies to an event-ordering question: in order, reversed with a blank line, shuffled with one
    item dropped and an unrelated line, reworded, and all on one line."""
    rng = random.Random(key)
    shuffled = list(rubric)
    rng.shuffle(shuffled)
    kept = shuffled[:-1] if len(shuffled) > 1 else shuffled
    return [
        "\n".join(f"{i + 1}. {item}" for i, item in enumerate(rubric)),
        "\n".join([*(f"- {item}" for item in reversed(rubric[1:])), "", f"- {rubric[0]}"]),
        "\n".join([*kept[:1], "Something unrelated came up about the weather.", *kept[1:]]),
        "\n".join(f"You first mentioned {item.lower()}" for item in rubric),
        ", ".join(rubric),
    ]


def beam_cases(tier: Path) -> Iterator[BeamCase]:
    """Every question of a BEAM tier folder (chats in numeric order, abilities and lists in file order)."""
    chats = sorted((d for d in tier.iterdir() if d.name.isdigit()), key=lambda d: int(d.name))
    for chat in chats:
        data = json.loads((chat / "probing_questions" / "probing_questions.json").read_text(encoding="utf-8"))
        items = [(ability, i, q) for ability, qs in data.items() for i, q in enumerate(qs)]
        for n, (ability, i, q) in enumerate(items):
            key = f"{tier.name}-{chat.name}-{ability}-{i}"
            if ability == BEAM_EVENT_ORDERING:
                outputs = _ordering_outputs(key, q["rubric"])
            else:
                other = items[(n + 3) % len(items)][2]
                outputs = [_reference(q), _reference(other), ""]
            yield BeamCase(key, ability, q["question"], tuple(q["rubric"]), tuple(outputs))


def beam_case_payload(case: BeamCase) -> list[Any]:
    return [case.key, case.ability, case.question, list(case.rubric), list(case.outputs)]


def _content(messages: Sequence[Mapping[str, str]]) -> str:
    return messages[-1]["content"]


def _rubric_reply(prompt: str) -> str:
    h = _h(prompt)
    score = (1.0, 0.5, 0.0)[h % 3]
    style = (h // 3) % 20
    obj = {"score": score, "reason": "The rubric criterion is checked against the response."}
    if style <= 4:
        return json.dumps(obj)
    if style <= 8:
        return "```json\n" + json.dumps(obj, indent=2) + "\n```"
    if style <= 11:
        return "Here is my evaluation:\n" + json.dumps(obj) + "\nThat is all."
    if style <= 14:
        return json.dumps({"score": int(score) if score != 0.5 else score, "reason": "integer where whole"})
    if style <= 16:
        return json.dumps(obj, indent=3)
    if style == 17:
        return "```\n" + json.dumps(obj) + "\n```"
    if style == 18:
        return json.dumps({"score": "0.5" if score == 0.5 else str(int(score)), "reason": "a string score"})
    return f"Score: {score}. The response partly meets the criterion."  # no JSON: the official code repairs


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _equivalence_reply(user: str) -> str:
    m = _SNIPPETS.match(user)
    if m is None:
        raise ValueError(f"not an alignment request: {user[:80]!r}")
    reference, line = _words(m.group(1)), _words(m.group(2))
    same = bool(reference) and len(reference & line) / len(reference) >= 0.5
    style = _h(user) % 6
    if style == 5 and not same:
        return "no, not yes"  # the official reading ('yes' in the lower-cased reply) takes this as a match
    return (("YES", "NO"), ("**YES**", "**NO**"), ("Yes.", "No."), ("yes", "no"), ("YES", "NO"), ("YES", "NO"))[style][
        0 if same else 1
    ]


def beam_reply(messages: Sequence[Mapping[str, str]]) -> str:
    """The fixed reply of BEAM's judge to one request (rubric item, alignment, or fact extraction)."""
    text = _content(messages)
    if len(messages) == 2 and messages[0]["role"] == "system":
        return _equivalence_reply(text)
    if "RUBRIC CRITERION (what to check):" in text:
        return _rubric_reply(text)
    if "semantic fact unit" in text:  # the official event-ordering code asks this and discards the answer
        return "1. A fact"
    raise ValueError(f"unexpected BEAM judge request: {text[:80]!r}")


# ---- LoCoMo-Plus ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlusCase:
    """One LoCoMo-Plus item (``index`` in locomo_plus.json) and the predictions judged for it."""

    index: int
    outputs: tuple[str, ...]


def plus_cases(items: Sequence[Mapping[str, Any]]) -> Iterator[PlusCase]:
    """Predictions per item: one that picks up the cue, one that ignores it, the official "(empty)"."""
    for i, item in enumerate(items):
        cue_words = " ".join(sorted(_words(item["cue_dialogue"]))[:6])
        yield PlusCase(i, (f"That reminds me of what you told me: {cue_words}.", "Sounds good, enjoy!", "(empty)"))


def plus_case_payload(case: PlusCase) -> list[Any]:
    return [case.index, list(case.outputs)]


def plus_reply(prompt: str) -> str:
    """The fixed reply of LoCoMo-Plus's judge to one prompt, in the styles of a real judge's replies."""
    h = _h(prompt)
    label = ("correct", "wrong", "partial", "correct", "wrong")[h % 5]
    style = (h // 5) % 10
    if style <= 3:
        return json.dumps({"label": label, "reason": "Checks the link to the evidence."})
    if style == 4:
        return "```json\n" + json.dumps({"label": label, "reason": "fenced"}) + "\n```"
    if style == 5:
        return json.dumps({"reason": "reason first", "label": label})
    if style == 6:
        return f"The prediction is {'incorrect' if label == 'wrong' else label}."  # no JSON: the fallback reads words
    if style == 7:
        # a non-text reason sends the official reader to its fallback
        return json.dumps({"label": label.upper(), "reason": 3})
    if style == 8:
        return json.dumps([label])
    return json.dumps({"label": "unsure", "reason": "an unknown label"})
