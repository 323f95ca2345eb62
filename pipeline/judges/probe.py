"""Judge probes: answers whose verdict is known, built from a dataset's own questions.

Why: a judge's accuracy is only as good as the judge. Agreement between two judges (kappa) says
nothing when both accept the same vague answer; a probe set asks each judge about answers that are
known to be wrong or right, so its false-accept and false-reject rates can be read beside its
numbers. Everything is derived from the question and its gold answer (no LLM writes the probes), so
the set is the same on every run and every machine.

Known wrong (``expected_correct`` False):
- ``other_gold``: the gold answer of another question of the set (the next one in order whose gold
  differs), a fluent, specific, wrong answer;
- ``vague_on_topic``: "It had something to do with <the question's own words>, but I don't remember
  the details." (on topic, names no answer);
- ``negation``: "No, it was not <gold>." (names the gold only to deny it);
- ``i_dont_know``: "I don't know." to an answerable question.
Known right (``expected_correct`` True):
- ``gold``: the gold answer as given;
- ``paraphrase``: the gold answer in a sentence, with a date in another format when it holds one
  ("7 May 2023" -> "May 7, 2023", "May 7, 2023" -> "7 May 2023", "2023-05-07" -> "May 7, 2023").

Questions without a plain gold answer are left out: multiple choice (an option index, not text),
LongMemEval abstention questions and LoCoMo category 5 (their right answer is an abstention), and
LongMemEval preference questions (their gold is a rubric).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from pipeline.core.records import QuestionRow

PROBE_OTHER_GOLD = "other_gold"
PROBE_VAGUE = "vague_on_topic"
PROBE_NEGATION = "negation"
PROBE_IDK = "i_dont_know"
PROBE_GOLD = "gold"
PROBE_PARAPHRASE = "paraphrase"
# probe kind -> whether the answer is right (the verdict a perfect judge gives)
PROBE_KINDS: dict[str, bool] = {
    PROBE_OTHER_GOLD: False,
    PROBE_VAGUE: False,
    PROBE_NEGATION: False,
    PROBE_IDK: False,
    PROBE_GOLD: True,
    PROBE_PARAPHRASE: True,
}
DEFAULT_PER_TYPE = 5  # questions per question type: 6 probes each
IDK_ANSWER = "I don't know."
_NO_PROBE_TYPES = frozenset({"single-session-preference", "5"})  # rubric golds; LoCoMo adversarial

_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_MONTH = "|".join(_MONTHS)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? ({_MONTH}),? (\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b")
_ISO = re.compile(r"\b(\d{4})[-/](\d{2})[-/](\d{2})\b")
_LEAD = re.compile(
    r"^(what|which|who|whom|whose|when|where|why|how( many| much| long| often)?)\s+"
    r"((did|does|do|is|was|were|are|has|have|had|will|would|can|could|should)\s+)?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Probe:
    """One answer of known verdict to one question."""

    partition_key: str
    question_id: str
    type_raw: str
    type_name: str
    kind: str  # PROBE_* above
    expected_correct: bool
    answer: str
    reformatted_date: bool = False  # paraphrase only: the gold's date was written another way

    @property
    def probe_hash(self) -> str:
        """What the probe is: part of its unit hash, so a changed probe text is judged again."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def reformat_date(text: str) -> str | None:
    """``text`` with its first date written in another format, or None when it holds no date."""
    m = _DAY_MONTH_YEAR.search(text)
    if m:
        return text[: m.start()] + f"{m.group(2)} {int(m.group(1))}, {m.group(3)}" + text[m.end() :]
    m = _MONTH_DAY_YEAR.search(text)
    if m:
        return text[: m.start()] + f"{int(m.group(2))} {m.group(1)} {m.group(3)}" + text[m.end() :]
    m = _ISO.search(text)
    if m and 1 <= int(m.group(2)) <= 12:
        month = _MONTHS[int(m.group(2)) - 1]
        return text[: m.start()] + f"{month} {int(m.group(3))}, {m.group(1)}" + text[m.end() :]
    return None


def topic_of(question: str) -> str:
    """The question's own words without its question word and auxiliary ("What did Caroline research?"
    -> "Caroline research"): what a vague on-topic answer talks about."""
    words = _LEAD.sub("", question.strip()).rstrip("?. ").strip()
    return words or question.strip().rstrip("?")


def probe_gold(q: QuestionRow) -> str | None:
    """The question's plain gold answer, or None when it has none to probe with (see the module doc)."""
    if q.choices is not None or q.is_abstention or q.type_raw in _NO_PROBE_TYPES:
        return None
    gold = (q.answer or "").strip()
    return gold or None


def select_questions(questions: Sequence[QuestionRow], per_type: int = DEFAULT_PER_TYPE) -> list[QuestionRow]:
    """The first ``per_type`` probe-able questions of each type, in partition-key order (deterministic)."""
    taken: dict[str, int] = {}
    out = []
    for q in sorted(questions, key=lambda q: q.partition_key):
        if probe_gold(q) is None or taken.get(q.type_raw, 0) >= per_type:
            continue
        taken[q.type_raw] = taken.get(q.type_raw, 0) + 1
        out.append(q)
    return out


def _probe(q: QuestionRow, kind: str, answer: str, reformatted: bool = False) -> Probe:
    return Probe(q.partition_key, q.question_id, q.type_raw, q.type_name, kind, PROBE_KINDS[kind], answer, reformatted)


def build_probes(questions: Sequence[QuestionRow], per_type: int = DEFAULT_PER_TYPE) -> list[Probe]:
    """Six probes per selected question (fewer when no other question's gold differs from its own)."""
    chosen = select_questions(questions, per_type)
    golds = [probe_gold(q) or "" for q in chosen]
    probes: list[Probe] = []
    for i, q in enumerate(chosen):
        gold = golds[i]
        others = [golds[(i + j) % len(golds)] for j in range(1, len(golds))]
        other = next((g for g in others if g.strip().lower() != gold.lower()), None)
        if other is not None:
            probes.append(_probe(q, PROBE_OTHER_GOLD, other))
        probes.append(_probe(q, PROBE_VAGUE, f"It had something to do with {topic_of(q.question)}, but I don't "
                                             "remember the details."))  # fmt: skip
        probes.append(_probe(q, PROBE_NEGATION, f"No, it was not {gold}."))
        probes.append(_probe(q, PROBE_IDK, IDK_ANSWER))
        probes.append(_probe(q, PROBE_GOLD, gold))
        dated = reformat_date(gold)
        probes.append(_probe(q, PROBE_PARAPHRASE, f"The answer is {dated or gold}.", dated is not None))
    return probes
