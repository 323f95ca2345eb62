"""The inputs of the parity tests, built from the raw benchmark files.

Why a module of its own: the expected figures in tests/data/official/ were computed by the
benchmarks' own scoring code, run outside this repository on exactly these inputs. Both sides
(that outside run and the tests) build them here, and ``inputs_digest`` fingerprints them, so a
test can prove it fed membench the same inputs the stored figures were computed from.

Everything here is membench's: realistic predictions and retrieval contexts for LoCoMo, a
lexical and a seeded random ranking of the user turns for LongMemEval. No scoring happens here.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

LOCOMO_CONTEXT_SEED = 10  # the random.Random seed of the LoCoMo retrieval contexts
LOCOMO_OTHER_OFFSETS = (1, 7, 19)  # predictions borrow the gold of the questions this far ahead
ABSTAINING_OUTPUTS = ("Not  mentioned", "not mentioned")  # a near miss (two spaces) and the phrase


@dataclass(frozen=True)
class LocomoCase:
    """One LoCoMo question with the outputs and contexts it is scored on.

    ``key`` is ``<sample_id>#<index in the sample's qa list>``; ``contexts`` holds a dialogue-id
    context (ten random turns plus the first evidence id) and a session context (five ``S<n>``)."""

    key: str
    category: int
    answer: Any
    evidence: tuple[str, ...]
    outputs: tuple[str, ...]
    contexts: tuple[tuple[str, ...], ...]
    question: str


def _dialogue_turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The sample's turns in session order (the ``session_<n>`` lists of its conversation)."""
    conversation = sample["conversation"]
    return [t for k, v in conversation.items() if k.startswith("session_") and isinstance(v, list) for t in v]


def _outputs(turn_text: dict[str, str], qa: dict[str, Any], others: list[dict[str, Any]]) -> list[str]:
    """Realistic outputs: the evidence turns' text, gold answers of other questions, abstentions."""
    outs = [turn_text[e] for e in qa.get("evidence", []) if e in turn_text]
    outs += [str(o.get("answer", o.get("adversarial_answer", ""))) for o in others]
    outs += [str(qa.get("answer", "")), str(qa.get("adversarial_answer", "")), *ABSTAINING_OUTPUTS]
    return outs


def locomo_cases(data: list[dict[str, Any]]) -> Iterator[LocomoCase]:
    """Every question of ``locomo10.json`` in file order (the context RNG runs across samples)."""
    rng = random.Random(LOCOMO_CONTEXT_SEED)
    for sample in data:
        turns = _dialogue_turns(sample)
        dia_ids = [t["dia_id"] for t in turns]
        turn_text = {t["dia_id"]: t["text"] for t in turns}
        qas = sample["qa"]
        for i, qa in enumerate(qas):
            others = [qas[(i + d) % len(qas)] for d in LOCOMO_OTHER_OFFSETS]
            evidence = tuple(qa.get("evidence", []))
            turn_context = tuple(rng.sample(dia_ids, 10)) + evidence[:1]
            session_context = tuple(f"S{s}" for s in rng.sample(range(1, 30), 5))
            yield LocomoCase(
                key=f"{sample['sample_id']}#{i}",
                category=qa["category"],
                answer=qa.get("answer"),
                evidence=evidence,
                outputs=tuple(_outputs(turn_text, qa, others)),
                contexts=(turn_context, session_context),
                question=qa["question"],
            )


def locomo_case_payload(case: LocomoCase) -> list[Any]:
    """What of a case enters the inputs digest."""
    return [case.key, case.category, case.answer, list(case.evidence), list(case.outputs),
            [list(c) for c in case.contexts]]  # fmt: skip


_WORD = re.compile(r"\w+")


def lexical_ranking(question: str, texts: list[str]) -> list[int]:
    """Indices of ``texts`` by descending count of shared lower-case words (ties: original order)."""
    asked = set(_WORD.findall(question.lower()))
    overlap = [len(asked & set(_WORD.findall(text.lower()))) for text in texts]
    return sorted(range(len(texts)), key=lambda i: (-overlap[i], i))


def random_ranking(question_id: str, n: int) -> list[int]:
    """A permutation of ``range(n)`` seeded by the question id."""
    order = list(range(n))
    random.Random(question_id).shuffle(order)
    return order


RANKINGS = ("lexical", "random")


def lme_user_turn_texts(record: dict[str, Any]) -> list[str]:
    """The contents of the haystack's user turns, session by session, in order: the turn corpus
    LongMemEval's retrieval scores (its 'turn' granularity indexes user turns only)."""
    return [t["content"] for session in record["haystack_sessions"] for t in session if t["role"] == "user"]


def lme_rankings(record: dict[str, Any]) -> dict[str, list[int]]:
    """The two rankings of a question's user-turn corpus, by name (``RANKINGS``)."""
    texts = lme_user_turn_texts(record)
    return {
        "lexical": lexical_ranking(record["question"], texts),
        "random": random_ranking(record["question_id"], len(texts)),
    }


def lme_flat_payload(record: dict[str, Any]) -> list[Any]:
    """What of a record the flat retrievers' figures depend on: its id, its question (the query)
    and its user-turn corpus (the documents; the session documents are their joins)."""
    return [record["question_id"], record["question"], lme_user_turn_texts(record)]


def is_lme_abstention_id(question_id: str) -> bool:
    """LongMemEval marks abstention questions with '_abs' in the id; its retrieval averages skip them."""
    return "_abs" in question_id


def inputs_digest(payloads: Iterable[Any]) -> str:
    """sha256 over the canonical JSON of every input payload, in order."""
    digest = hashlib.sha256()
    for payload in payloads:
        digest.update(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())
        digest.update(b"\n")
    return digest.hexdigest()
