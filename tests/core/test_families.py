"""The dataset-family rule and the ``_abs`` rule have one definition (pipeline/core/families.py).

Why a test beyond the unit cases: copies of these rules drifted before (``lme*`` loaders were
LongMemEval for the judges but not for retrieval metrics). The source scan fails when a new copy
of either rule appears outside pipeline/core/families.py.
"""

from __future__ import annotations

import re

import pytest

from pipeline.core.families import (
    FAMILY_BEAM,
    FAMILY_LOCOMO,
    FAMILY_LOCOMO_PLUS,
    FAMILY_LONGMEMEVAL,
    FAMILY_MC10,
    UnknownFamilyError,
    dataset_family,
    is_abstention_id,
    is_longmemeval,
)
from pipeline.datasets.longmemeval import load_longmemeval
from pipeline.metrics.retrieval import PROTOCOL_EVIDENCE, PROTOCOL_LONGMEMEVAL, gold_protocol
from tests.support.paths import PROJECT_ROOT


@pytest.mark.parametrize(
    ("loader", "family"),
    [
        ("locomo", FAMILY_LOCOMO),
        ("locomo_mc10", FAMILY_MC10),
        ("LoCoMo_MC", FAMILY_MC10),
        ("longmemeval", FAMILY_LONGMEMEVAL),
        ("longmemeval_s", FAMILY_LONGMEMEVAL),
        ("lme_m", FAMILY_LONGMEMEVAL),
        ("beam", FAMILY_BEAM),
        ("locomo_plus", FAMILY_LOCOMO_PLUS),  # not LoCoMo: its questions have no short gold answer
    ],
)
def test_family_of_loader_names(loader: str, family: str) -> None:
    assert dataset_family(loader) == family
    assert is_longmemeval(loader) == (family == FAMILY_LONGMEMEVAL)
    # retrieval metrics follow the same rule (they used to accept only ``longmemeval*``)
    assert gold_protocol(loader) == (PROTOCOL_LONGMEMEVAL if family == FAMILY_LONGMEMEVAL else PROTOCOL_EVIDENCE)


def test_unknown_family_is_an_error_naming_the_loader() -> None:
    with pytest.raises(UnknownFamilyError, match="'squad'"):
        dataset_family("squad")
    assert not is_longmemeval("squad")


def test_abstention_rule_on_the_sample() -> None:
    assert is_abstention_id("gpt4_2655b836_abs") and not is_abstention_id("gpt4_abs_2655b836")
    path = PROJECT_ROOT / "pipeline/sample_data/longmemeval_oracle_sample.json"
    questions = [r.question for r in load_longmemeval(path, "lme") if r.question is not None]
    flagged = {q.question_id for q in questions if q.is_abstention}
    assert flagged and flagged == {q.question_id for q in questions if is_abstention_id(q.question_id)}


RULE_COPIES = (
    re.compile(r"""endswith\(\s*["']_abs["']\s*\)"""),
    re.compile(r"""["']_abs["']\s*$""", re.MULTILINE),  # a suffix constant
    re.compile(r"""["']mc10["']\s+in\b"""),
    re.compile(r"""startswith\(\s*["'](longmemeval|lme)["']\s*\)"""),
)


def test_no_other_copy_of_the_rules_in_library_code() -> None:
    offenders = []
    for folder in ("pipeline", "assets", "resources"):
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            if path.name == "families.py":
                continue
            text = path.read_text()
            offenders += [f"{path.relative_to(PROJECT_ROOT)}: {p.pattern}" for p in RULE_COPIES if p.search(text)]
    assert offenders == []
