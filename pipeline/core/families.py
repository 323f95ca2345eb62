"""Dataset families and the LongMemEval abstention rule: one definition each.

Why one module: which loader names are LoCoMo, LoCoMo-MC10, LongMemEval, BEAM or LoCoMo-Plus decides which judges
run, which gold protocol retrieval metrics use and how questions are typed; and "a LongMemEval
question whose id ends in ``_abs`` is an abstention question" decides how it is judged and that
retrieval does not score it. When these rules had several copies they drifted (one accepted
``lme*`` loader names, another only ``longmemeval*``). This module imports nothing from the
package, so the loaders, judges, metrics and reports can all use it without an import cycle.
"""

from __future__ import annotations

FAMILY_MC10 = "mc10"
FAMILY_LOCOMO = "locomo"
FAMILY_LONGMEMEVAL = "longmemeval"
FAMILY_BEAM = "beam"
# LoCoMo-Plus: its "Cognitive" items stitched into LoCoMo's conversations; judged by its own
# judge, never by LoCoMo's (its questions have no short gold answer), hence a family of its own
FAMILY_LOCOMO_PLUS = "locomo_plus"

# BEAM's ten memory abilities (its probing_questions.json keys, in the order its report prints them)
BEAM_ABSTENTION = "abstention"
BEAM_EVENT_ORDERING = "event_ordering"
BEAM_ABILITIES: tuple[str, ...] = (
    BEAM_ABSTENTION,
    "contradiction_resolution",
    BEAM_EVENT_ORDERING,
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)

# LongMemEval marks its abstention questions (the answer is not in the haystack) by this id suffix
ABSTENTION_SUFFIX = "_abs"


class UnknownFamilyError(ValueError):
    """A loader name that belongs to no known dataset family (judges are chosen per family)."""


def dataset_family(loader: str) -> str:
    """The family of a configured loader name: ``locomo_mc10`` -> mc10, ``longmemeval_s`` -> longmemeval.

    MC10 and LoCoMo-Plus are tested before LoCoMo because their loader names also contain ``locomo``.
    """
    name = loader.lower()
    if "mc10" in name or name.endswith("_mc"):
        return FAMILY_MC10
    if "locomo_plus" in name or "locomo-plus" in name or "locomoplus" in name:
        return FAMILY_LOCOMO_PLUS
    if "beam" in name:
        return FAMILY_BEAM
    if "locomo" in name:
        return FAMILY_LOCOMO
    if "longmemeval" in name or name.startswith("lme"):
        return FAMILY_LONGMEMEVAL
    raise UnknownFamilyError(
        f"loader {loader!r}: cannot tell its dataset family (expected a name containing "
        "'mc10', 'locomo_plus', 'locomo', 'longmemeval' or 'beam'); judges are chosen per family"
    )


def is_longmemeval(loader: str) -> bool:
    """True for LongMemEval loaders (oracle, S, M); False for LoCoMo, MC10 and unknown names."""
    try:
        return dataset_family(loader) == FAMILY_LONGMEMEVAL
    except UnknownFamilyError:
        return False


def is_abstention_id(question_id: str) -> bool:
    """LongMemEval's abstention rule: the question id ends in ``_abs`` (apply to LongMemEval only)."""
    return question_id.endswith(ABSTENTION_SUFFIX)
