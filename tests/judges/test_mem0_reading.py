"""mem0's LoCoMo judge reads a reply as mem0's final ``extract_json`` does; the pinned reading is kept.

The 22 reply forms below are read by both versions of mem0's ``extract_json`` (behaviour described
in pipeline/judges/llm.py); exactly two differ: a JSON verdict with prose before or after it, which
the final version reads (first "{" to last "}") and the pinned one could not parse.
"""

from __future__ import annotations

import pytest

from pipeline.judges.base import JudgeContext, JudgeInput, UnparseableVerdict
from pipeline.judges.llm import (
    MEM0_LOCOMO_JUDGE,
    MEM0_READING_FINAL,
    MEM0_READING_PINNED,
    mem0_extract_json,
    mem0_label,
    mem0_locomo_judge,
)
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer
from tests.support.judges import locomo

pytest_plugins = ["tests.support.llm"]  # fixtures: server (fake OpenAI server), llm (OpenAIChatClient on it)

# (reply, label under the pinned reading, label under the final reading); None = no label (unparseable)
REPLY_FORMS: list[tuple[str, str | None, str | None]] = [
    ('{"label": "CORRECT"}', "CORRECT", "CORRECT"),
    ('{"label": "WRONG"}', "WRONG", "WRONG"),
    ('```json\n{"label": "CORRECT"}\n```', "CORRECT", "CORRECT"),
    ('```\n{"label": "WRONG"}\n```', "WRONG", "WRONG"),
    (' {"label": "CORRECT"} \n', "CORRECT", "CORRECT"),
    ('{"label":"CORRECT","reason":"same date"}', "CORRECT", "CORRECT"),
    ('{\n  "label": "WRONG"\n}', "WRONG", "WRONG"),
    ('{"label": "correct"}', "correct", "correct"),
    ('{"label": "PARTIALLY CORRECT"}', "PARTIALLY CORRECT", "PARTIALLY CORRECT"),
    ("CORRECT", None, None),
    ("WRONG", None, None),
    ('The answer names the same date. {"label": "CORRECT"}', None, "CORRECT"),
    ('{"label": "WRONG"} The dates differ.', None, "WRONG"),
    ('{"verdict": "CORRECT"}', None, None),
    ("", None, None),
    ('Same topic.\n```json\n{"label": "CORRECT"}\n```', "CORRECT", "CORRECT"),
    ('{"label": "CORRECT"} {"label": "WRONG"}', None, None),
    ('["CORRECT"]', None, None),
    ('{"label": ["CORRECT"]}', '["CORRECT"]', '["CORRECT"]'),
    ("Reasoning: {not json} so CORRECT", None, None),
    ('{"label": "CORRECT"', None, None),
    ("null", None, None),
]


def test_twenty_two_forms_two_differ() -> None:
    assert len(REPLY_FORMS) == 22
    differ = [r for r, pinned, final in REPLY_FORMS if pinned != final]
    assert len(differ) == 2, differ


@pytest.mark.parametrize(("reply", "pinned", "final"), REPLY_FORMS)
def test_each_reading(reply: str, pinned: str | None, final: str | None) -> None:
    assert mem0_label(reply, MEM0_READING_PINNED) == pinned
    assert mem0_label(reply, MEM0_READING_FINAL) == final
    assert mem0_label(reply) == final  # the final reading is the default


def test_final_extract_json_spans_first_to_last_brace() -> None:
    assert mem0_extract_json('a {"x": {"y": 1}} b') == '{"x": {"y": 1}}'
    assert mem0_extract_json("a } then { b") == "a } then { b"  # "}" before "{": the reply as it is
    with pytest.raises(ValueError, match="unknown mem0 judge reading"):
        mem0_extract_json("{}", "newest")


def test_judge_reads_final_by_default_and_pinned_on_request(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    server.add_rule("Generated answer: Paris", 'Both name Paris. {"label": "CORRECT"}')
    inp = JudgeInput(locomo("1", "Paris"), "Paris")
    verdict = mem0_locomo_judge(inp, JudgeContext(llm=llm))
    assert verdict.correct is True and verdict.details["reading"] == MEM0_READING_FINAL
    with pytest.raises(UnparseableVerdict):
        mem0_locomo_judge(inp, JudgeContext(llm=llm, params={"reading": MEM0_READING_PINNED}))


def test_reading_is_a_validated_param_of_the_judge() -> None:
    assert MEM0_LOCOMO_JUDGE.version == "2" and "reading" in MEM0_LOCOMO_JUDGE.allowed_params
    assert MEM0_LOCOMO_JUDGE.params_model is not None
    MEM0_LOCOMO_JUDGE.params_model(reading="pinned")
    with pytest.raises(ValueError):
        MEM0_LOCOMO_JUDGE.params_model(reading="latest")
