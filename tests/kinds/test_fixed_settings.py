"""What check-config says a judge's protocol fixes is what its unit identity leaves out."""

from __future__ import annotations

import pytest

from pipeline.kinds.fixed_settings import JUDGE_FIXED
from pipeline.kinds.judges import JUDGES

LLM_JUDGES = [name for name in JUDGES.names() if JUDGES.get(name).needs_llm]


@pytest.mark.parametrize("name", LLM_JUDGES)
def test_a_fixed_setting_is_not_taken_from_the_endpoint_and_every_other_one_is(name: str) -> None:
    spec = JUDGES.get(name)
    fixed = {f.key for f in JUDGE_FIXED.get(spec.metric, ())}
    assert {"temperature", "max_tokens"} - set(spec.llm_fields) == fixed
    assert {"model", "model_tag"} <= set(spec.llm_fields)  # every judge asks the configured model
