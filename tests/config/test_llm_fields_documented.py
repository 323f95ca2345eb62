"""docs/guide/llm.md lists every field of ``llm:`` / ``judge_llm:`` with its default, as the config model has them.

Why: a field added to LLMConfig, or a default changed, must reach the page a user reads to write the block.
"""

from __future__ import annotations

import re

from pydantic_core import PydanticUndefined

from pipeline.config.model import LLMConfig
from tests.support.paths import PROJECT_ROOT

DOC = PROJECT_ROOT / "docs" / "guide" / "llm.md"
ROW = re.compile(r"^\| `(?P<field>[a-z_]+)` \| (?P<default>[^|]+?) \| (?P<what>[^|]+) \|$", re.M)


def _documented() -> dict[str, str]:
    return {m.group("field"): m.group("default").strip() for m in ROW.finditer(DOC.read_text())}


def _shown(default: object) -> str:
    """A default as the table writes it: required, none (...), or the value in backticks."""
    if default is PydanticUndefined:
        return "required"
    if default is None:
        return "none"
    return f"`{default}`"


def test_every_llm_field_is_in_the_table_with_its_default() -> None:
    documented = _documented()
    expected = {name: _shown(info.default) for name, info in LLMConfig.model_fields.items()}
    assert sorted(documented) == sorted(expected)
    wrong = {n: (documented[n], d) for n, d in expected.items() if not documented[n].startswith(d)}
    assert wrong == {}, f"documented default vs the model's: {wrong}"
