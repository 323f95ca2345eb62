"""Judge probes: the probe set built from a dataset's questions (pure), table-tested."""

from __future__ import annotations

from collections import Counter

import pytest

from pipeline.judges.probe import (
    IDK_ANSWER,
    PROBE_GOLD,
    PROBE_KINDS,
    PROBE_NEGATION,
    PROBE_OTHER_GOLD,
    PROBE_PARAPHRASE,
    PROBE_VAGUE,
    build_probes,
    probe_gold,
    reformat_date,
    select_questions,
    topic_of,
)
from tests.support.judges import lme, locomo, mc, question


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7 May 2023", "May 7, 2023"),
        ("The week before 9 June, 2023", "The week before June 9, 2023"),
        ("May 7th, 2023", "7 May 2023"),
        ("on 2023/05/30", "on May 30, 2023"),
        ("2023-13-01", None),  # not a month
        ("Adoption agencies", None),
        ("2022", None),  # a year alone is not reformatted
    ],
)
def test_reformat_date(text: str, expected: str | None) -> None:
    assert reformat_date(text) == expected


@pytest.mark.parametrize(
    ("q", "topic"),
    [
        ("What did Caroline research?", "Caroline research"),
        ("How long did I wait for the decision?", "I wait for the decision"),
        ("Where is the Eiffel tower?", "the Eiffel tower"),
        ("Caroline's hobby?", "Caroline's hobby"),
    ],
)
def test_topic_of(q: str, topic: str) -> None:
    assert topic_of(q) == topic


def test_only_plain_golds_are_probed() -> None:
    assert probe_gold(locomo("4", "Adoption agencies")) == "Adoption agencies"
    assert probe_gold(locomo("5", None)) is None  # adversarial: the right answer is an abstention
    assert probe_gold(lme("single-session-user", "x", question_id="q_abs")) is None
    assert probe_gold(lme("single-session-preference", "a rubric")) is None
    assert probe_gold(mc()) is None
    assert probe_gold(locomo("4", "  ")) is None


def _qs() -> list:
    return [
        question(question_id="a1", type_raw="4", answer="Adoption agencies"),
        question(question_id="a2", type_raw="4", answer="7 May 2023", text="When did she go?"),
        question(question_id="a3", type_raw="4", answer="adoption agencies"),  # same gold as a1, other case
        question(question_id="b1", type_raw="2", answer="Paris"),
        question(question_id="c1", type_raw="5", answer=None),
    ]


def test_select_first_per_type_in_key_order() -> None:
    assert [q.question_id for q in select_questions(_qs(), per_type=2)] == ["a1", "a2", "b1"]


def test_probes_per_question_and_their_texts() -> None:
    probes = build_probes(_qs(), per_type=2)
    assert Counter(p.kind for p in probes) == {k: 3 for k in PROBE_KINDS}  # a1, a2, b1: six each
    by = {(p.question_id, p.kind): p for p in probes}
    assert by[("a1", PROBE_OTHER_GOLD)].answer == "7 May 2023"  # the next question's gold
    assert by[("b1", PROBE_OTHER_GOLD)].answer == "Adoption agencies"  # wraps round
    assert by[("a1", PROBE_NEGATION)].answer == "No, it was not Adoption agencies."
    assert (
        by[("a1", PROBE_VAGUE)].answer
        == "It had something to do with Caroline research, but I don't remember the details."
    )
    assert (
        by[("a2", PROBE_PARAPHRASE)].answer == "The answer is May 7, 2023."
        and by[("a2", PROBE_PARAPHRASE)].reformatted_date
    )
    assert (
        by[("a1", PROBE_PARAPHRASE)].answer == "The answer is Adoption agencies."
        and not by[("a1", PROBE_PARAPHRASE)].reformatted_date
    )
    assert all(p.answer == IDK_ANSWER for p in probes if p.kind == "i_dont_know")
    assert all(p.expected_correct == (p.kind in (PROBE_GOLD, PROBE_PARAPHRASE)) for p in probes)
    assert build_probes(_qs(), per_type=2) == probes  # deterministic
    assert len({p.probe_hash for p in probes}) == len(probes)


def test_no_other_gold_when_every_gold_is_the_same() -> None:
    same = [question(question_id=f"s{i}", answer="Paris") for i in range(3)]
    kinds = Counter(p.kind for p in build_probes(same, per_type=3))
    assert kinds[PROBE_OTHER_GOLD] == 0 and kinds[PROBE_GOLD] == 3
