"""The ONE LoCoMo category mapping this project reports: the official LoCoMo scoring code's.

Why pinned: the raw ``category`` integers 1-5 are named differently across projects (the LoCoMo
paper's prose order, LoCoMo-MC10's labels and several memory papers disagree), so a per-category
score is meaningless unless the mapping is named. We store the raw integer in
``questions.type_raw`` and this mapping's name in ``questions.type_name``; reports cite
``LOCOMO_CATEGORY_MAPPING``.

Source: snap-research/locomo ``task_eval/evaluation.py`` and ``evaluation_stats.py``. The code
does not print names; the mapping follows from how each category is scored there: 1 with the
multi-answer F1 (prediction and gold split on ','), 3 with only the first ';'-part of the gold,
5 by checking the reply for "no information available" / "not mentioned", 2 and 4 with plain F1;
its per-category table prints categories in the order [4, 1, 2, 3, 5] = single-hop, multi-hop,
temporal, open-domain, adversarial. The README of ../shared/datasets states the same mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

LOCOMO_CATEGORY_MAPPING = "locomo_official"

LOCOMO_CATEGORY_NAMES: Mapping[int, str] = MappingProxyType(
    {
        1: "multi-hop",
        2: "temporal",
        3: "open-domain",
        4: "single-hop",
        5: "adversarial",
    }
)

ADVERSARIAL_CATEGORY = 5

# Prefix of an MC10 ``type_name`` whose relation to LoCoMo categories was not verified (see
# pipeline.datasets.crosscheck): the label is the dataset's own, not a LoCoMo category name.
MC10_UNVERIFIED_PREFIX = "mc10:"
MC10_ADVERSARIAL_LABEL = "adversarial"


def locomo_type_name(category: int | str) -> str:
    """Official name of a LoCoMo category given as int or its string form (``"2"``)."""
    return LOCOMO_CATEGORY_NAMES[int(category)]


def mc10_unverified_name(label: str) -> str:
    """``type_name`` of an MC10 question whose LoCoMo category is unknown."""
    return f"{MC10_UNVERIFIED_PREFIX}{label}"
