"""``locomo_full_context``: LoCoMo's official full-context protocol as a memory-system preset.

Follows snap-research/locomo (branch ``code``) ``task_eval/evaluate_gpts.py`` ``get_input_context``
and ``get_gpt_answers``: walking back from the newest session and, inside it, from its last
turn, a turn is kept while

    tokens('DATE: <date>\\nCONVERSATION:\\n' + turn) + tokens(context so far) + question tokens
        < window - per_question_allowance * batch_size

and the walk stops at the first turn that does not fit. A turn reads ``<speaker> said, "<text>"``
plus a newline; each visited session is headed ``DATE: <session date as given>`` and
``CONVERSATION:`` (also the session where the walk stopped), and every visited session appends
two newlines at the END of the context, as the official string building does. The context given to
the reader is the start prompt naming both speakers followed by those sessions; question tokens =
the tokens of the batch question prompt holding this question (category 2 and 5 forms as the
official reader asks them) plus those of the start prompt.

Deviations, on purpose: tokens are membench's pinned count (pipeline.core.tokens), not tiktoken (its
encodings are downloaded at run time); the speakers of the start prompt are named in order of
first appearance (the official code takes a Python ``set``, whose order varies between runs); one
question is sized at a time (``batch_size`` scales only the answer allowance); image captions are
not added (the released locomo10.json has no ``img_file`` key, so the official code adds none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import Field

from pipeline.core.records import QuestionRow
from pipeline.core.tokens import TOKEN_COUNT_DEFINITION, count_tokens
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult
from pipeline.memory.context import retrieved
from pipeline.memory.params import ParamsInput, SystemParams, parse_params
from pipeline.memory.units import KIND_SESSION, KIND_TURN
from pipeline.store.corpus import HaystackSession

KIND = "locomo_full_context"
PER_QA_TOKEN_BUDGET = 50  # evaluate_gpts.py: tokens kept free per question for its answer
LOCOMO_CONV_START_PROMPT = (
    "Below is a conversation between two people: {} and {}. The conversation takes place over multiple days "
    "and the date of each conversation is wriiten at the beginning of the conversation.\n\n"
)  # the protocol's text, typo included
# the question prompt the official reader sizes its context with (QA_PROMPT_BATCH + "<i>: <question>")
LOCOMO_QA_PROMPT_BATCH = (
    "\nBased on the above conversations, write short answers for each of the following questions in a few words. "
    '\nWrite the answers in the form of a json dictionary where each entry contains the question number as "key" '
    'and the short answer as "value". \nUse single-quote characters for named entities and double-quote characters '
    "for enclosing json elements. Answer with exact words from the conversations whenever possible.\n\n"
)
PREAMBLE_ID = "locomo_full_context:start"


class LocomoFullContextParams(SystemParams):
    # the model's context window in tokens (16000 = gpt-3.5-turbo-16k of LoCoMo's MAX_LENGTH table)
    window: int = Field(default=16_000, gt=0)
    per_question_allowance: int = Field(default=PER_QA_TOKEN_BUDGET, ge=0)
    batch_size: int = Field(default=1, ge=1)


def turn_line(speaker: str, text: str) -> str:
    return f'{speaker} said, "{text}"\n'


def session_header(date_raw: str | None) -> str:
    return f"DATE: {date_raw or ''}\nCONVERSATION:\n"


def question_prompt(question: str, category: str, adversarial_answer: str | None) -> str:
    """This question as the official reader puts it in its batch prompt (for sizing only)."""
    if category == "2":
        question += " Use DATE of CONVERSATION to answer with an approximate date."
    elif category == "5":  # either option order has the same tokens
        question += f" Select the correct answer: (a) Not mentioned in the conversation (b) {adversarial_answer}. "
    return LOCOMO_QA_PROMPT_BATCH + f"0: {question}"


@dataclass(frozen=True)
class Packed:
    """The packed context: the kept turn units (time order) and the text after the start prompt."""

    kept: tuple[MemoryUnit, ...]
    conversation: str


def pack(sessions: Sequence[tuple[MemoryUnit, Sequence[MemoryUnit]]], question_tokens: int, limit: int) -> Packed:
    """The official walk (newest session first, last turn first) over (header, turns) pairs."""
    blocks: list[str] = []
    kept: list[MemoryUnit] = []
    conv_tokens = 0
    for header, turns in reversed(sessions):
        header_tokens = count_tokens(header.text)
        fitted: list[MemoryUnit] = []
        stop = False
        for unit in reversed(turns):
            line_tokens = count_tokens(unit.text)
            if header_tokens + line_tokens + conv_tokens + question_tokens < limit:
                fitted.append(unit)
                conv_tokens += line_tokens
            else:
                stop = True
                break
        fitted.reverse()
        blocks.append(header.text + "".join(u.text for u in fitted))
        conv_tokens += header_tokens
        kept = fitted + kept
        if stop:
            break
    conversation = "".join(reversed(blocks)) + "\n\n" * len(blocks)
    return Packed(tuple(kept), conversation)


class LocomoFullContextMemory:
    """Keeps every turn; ``retrieve`` packs the most recent ones that fit the window."""

    params_model = LocomoFullContextParams
    version = 1
    kind = KIND
    uses_encoder = False
    uses_llm = False

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.params = parse_params(self.params_model, params, KIND)
        self.units: list[MemoryUnit] = []

    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        s = session.session
        added: list[MemoryUnit] = []
        if not self.units:  # the first session names the speakers of the start prompt
            speakers = [*dict.fromkeys(t.speaker for t in session.turns), "", ""]
            text = LOCOMO_CONV_START_PROMPT.format(speakers[0], speakers[1])
            added.append(self._unit(PREAMBLE_ID, haystack_id, session, (), text, KIND_SESSION))
        added.append(self._unit(f"{s.session_key}:date", haystack_id, session, (), session_header(s.datetime_raw),
                                KIND_SESSION))  # fmt: skip
        for t in session.turns:
            line = turn_line(t.speaker, t.text)
            added.append(self._unit(t.turn_id, haystack_id, session, (t.turn_id,), line, KIND_TURN))
        self.units.extend(added)
        return added

    @staticmethod
    def _unit(
        unit_id: str, haystack_id: str, hs: HaystackSession, turn_ids: tuple[str, ...], text: str, kind: str
    ) -> MemoryUnit:
        return MemoryUnit(unit_id, haystack_id, hs.session.session_key, hs.position, turn_ids, text,
                          hs.session.datetime, "user", kind)  # fmt: skip

    def restore(self, units: list[MemoryUnit]) -> None:
        self.units = list(units)

    def _sessions(self) -> tuple[str, list[tuple[MemoryUnit, list[MemoryUnit]]]]:
        """(start prompt, [(session header, its turns)] in haystack order)."""
        start = ""
        by_session: dict[str, tuple[MemoryUnit, list[MemoryUnit]]] = {}
        for u in sorted(self.units, key=lambda u: u.session_position):
            if u.unit_id == PREAMBLE_ID:
                start = u.text
            elif u.kind == KIND_SESSION:
                by_session[u.session_key] = (u, by_session.get(u.session_key, (u, []))[1])
            else:
                by_session.setdefault(u.session_key, (u, []))[1].append(u)
        return start, list(by_session.values())

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        p = self.params
        start, sessions = self._sessions()
        q_tokens = count_tokens(question_prompt(question.question, question.type_raw, question.adversarial_answer))
        limit = p.window - p.per_question_allowance * p.batch_size
        packed = pack(sessions, q_tokens + count_tokens(start), limit)
        context = start + packed.conversation
        total = sum(len(turns) for _, turns in sessions)
        return RetrievalResult(
            units=tuple(retrieved(u, rank) for rank, u in enumerate(packed.kept, start=1)),
            context=context,
            context_tokens=count_tokens(context),
            trimmed_units=total - len(packed.kept),
            notes={
                "protocol": "LoCoMo task_eval/evaluate_gpts.py get_input_context (most recent turns that fit)",
                "window": p.window,
                "answer_allowance": p.per_question_allowance * p.batch_size,
                "question_tokens": q_tokens,
                "token_count": TOKEN_COUNT_DEFINITION,
                "units_total": total,
                "trimmed_units": total - len(packed.kept),
            },
        )
