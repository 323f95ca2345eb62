"""Lexical judges and MC accuracy: table-driven, every expected value computed by hand.

F1 arithmetic in the comments: P = shared / prediction tokens, R = shared / gold tokens,
F1 = 2PR / (P + R), after the official normalisation and NLTK Porter stemming.
"""

from __future__ import annotations

import pytest

from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig, LLMConfig
from pipeline.judges.base import (
    DEFAULT_JUDGES,
    KIND_BEAM,
    KIND_LOCOMO,
    KIND_LOCOMO_PLUS,
    KIND_LONGMEMEVAL,
    KIND_MC10,
    METRIC_BEAM_EVENT_ORDERING,
    METRIC_BEAM_OFFICIAL,
    METRIC_BEAM_RUBRIC_MEAN,
    METRIC_LME_CONTAINS_NORMALIZED,
    METRIC_LME_LLM_JUDGE,
    METRIC_LME_OFFICIAL_LLM_JUDGE,
    METRIC_LOCOMO_EXACT_MATCH,
    METRIC_LOCOMO_F1,
    METRIC_LOCOMO_KEYWORD_OVERLAP,
    METRIC_LOCOMO_LLM_JUDGE,
    METRIC_LOCOMO_PLUS_JUDGE,
    METRIC_MC_ACCURACY,
    METRIC_MEM0_LOCOMO_JUDGE,
    METRIC_MEM0_LOCOMO_JUDGE_STRICT,
    JudgeConfigError,
    JudgeContext,
    JudgeInput,
    dataset_kind,
)
from pipeline.judges.lme import lme_contains_normalized
from pipeline.judges.locomo import (
    exact_match,
    f1_score,
    keyword_overlap,
    locomo_exact_match,
    locomo_f1,
    locomo_keyword_overlap,
    multi_answer_f1,
    normalize_answer,
)
from pipeline.judges.mc import confusion_matrix, mc_accuracy
from pipeline.judges.select import judges_for, unavailable_judges, without_llm_judge
from pipeline.kinds.judges import JUDGES, metric_info
from pipeline.kinds.resolve import resolve_config
from pipeline.util.registry import RegistryError
from tests.support.judges import lme, locomo, mc

CTX = JudgeContext()


def run(fn, q, prediction, **kw):  # type: ignore[no-untyped-def]
    return fn(JudgeInput(q, prediction, **kw), CTX)


# ---- official LoCoMo normalisation and F1 ---------------------------------------------------
@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The Adoption Agencies!", "adoption agencies"),
        ("Paris, and London.", "paris london"),  # ',' dropped first, 'and' is removed like articles
        ("a  an the", ""),
        ("7 May, 2023", "7 may 2023"),
        ("Andrew's band", "andrews band"),  # 'and' only as a whole word
    ],
)
def test_normalize_answer(text: str, normalized: str) -> None:
    assert normalize_answer(text) == normalized


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("7 May 2023", "7 May 2023", 1.0),
        # pred tokens she/went/on/7/may/2023 (6), gold 3, shared 3: P=.5 R=1 -> 2/3
        ("She went on 7 May 2023", "7 May 2023", 2 / 3),
        ("The adoption agencies", "Adoption agencies", 1.0),
        # stems run/marathon vs ran/marathon: shared 1, P=R=1/2 -> 0.5
        ("running marathons", "ran a marathon", 0.5),
        ("Paris and London!", "london, paris", 1.0),
        # multiset: 'yes' x3 vs x1: shared 1, P=1/3 R=1 -> 0.5
        ("yes yes yes", "yes", 0.5),
        ("pottery", "camping", 0.0),
        ("", "camping", 0.0),
        # 'dying' -> 'die' under NLTK's Porter (PyStemmer's 'porter' gives 'dy'): full match
        ("dying", "died", 1.0),
    ],
)
def test_f1_score(prediction: str, gold: str, expected: float) -> None:
    assert f1_score(prediction, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        # gold parts camping (best 0) and swimming (best 1.0): mean 0.5
        ("swimming, hiking", "camping, swimming", 0.5),
        # gold 'Sweden': best part 'She moved from Sweden' P=1/4 R=1 -> 0.4; 'Germany' 0 -> 0.2
        ("She moved from Sweden", "Sweden, Germany", 0.2),
        ("pottery, painting, camping", "camping, painting, pottery", 1.0),
    ],
)
def test_multi_answer_f1(prediction: str, gold: str, expected: float) -> None:
    assert multi_answer_f1(prediction, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("category", "gold", "prediction", "expected"),
    [
        ("1", "camping, swimming", "swimming, hiking", 0.5),  # multi-hop: split on ','
        ("2", "7 May 2023", "She went on 7 May 2023", 2 / 3),  # temporal: plain F1
        ("4", "camping, swimming", "swimming, hiking", 0.5),  # single-hop: NO split -> P=R=1/2
        ("3", "Likely yes; she enjoys the outdoors", "likely yes", 1.0),  # gold before ';'
        ("3", "Likely yes; she enjoys the outdoors", "she enjoys the outdoors", 0.0),
        ("5", None, "No information available.", 1.0),  # adversarial: official phrase check
        ("5", None, "That is NOT MENTIONED in the conversation", 1.0),
        ("5", None, "I don't know", 0.0),  # other phrasing is not the official rule
        ("5", None, "She went to Paris", 0.0),
    ],
)
def test_locomo_f1_per_category(category: str, gold: str | None, prediction: str, expected: float) -> None:
    verdict = run(locomo_f1, locomo(category, gold), prediction)
    assert verdict.score == pytest.approx(expected)
    assert verdict.correct is (expected == 1.0)


def test_category_4_without_split_hand_value() -> None:
    # single-hop gold "camping, swimming" is ONE answer: normalised 'camping swimming' vs
    # 'swimming hiking': shared 1, P=1/2 R=1/2 -> 0.5 (same number as the multi-hop case by chance)
    assert f1_score("swimming, hiking", "camping, swimming") == pytest.approx(0.5)
    # gold 'x, b c' as one answer: tokens x/b/c vs b/c: P=1 R=2/3 -> 0.8; as multi-hop (cat 1) the
    # gold parts are 'x' (0) and 'b c' (1.0) -> 0.5
    assert run(locomo_f1, locomo("4", "x, b c"), "b c").score == pytest.approx(0.8)
    assert run(locomo_f1, locomo("1", "x, b c"), "b c").score == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("May 7 2023", "7 May, 2023", True),  # token sets equal (order-free)
        ("the 7 May 2023", "7 May 2023", True),
        ("7 May 2023 morning", "7 May 2023", False),
        ("marathons", "marathon", False),  # no stemming in exact match
    ],
)
def test_exact_match(prediction: str, gold: str, expected: bool) -> None:
    assert exact_match(prediction, gold) is expected
    assert run(locomo_exact_match, locomo("2", gold), prediction).correct is expected


@pytest.mark.parametrize(
    ("category", "gold", "prediction", "correct", "score"),
    [
        ("4", "adoption agencies", "She researched adoption agencies", True, 1.0),  # substring
        ("4", "adoption agencies", "agencies for adoption", True, 1.0),  # 2/2 keywords
        ("4", "adoption agencies", "She looked at agencies", False, 0.5),  # 1/2 < 0.6
        ("2", "7 May 2023", "May 2023", True, 1.0),  # keywords may/2023 ('7' < 2 chars)
        ("4", "the beach and the park at noon", "beach, park", True, 2 / 3),  # beach/park/noon
        ("4", "the beach and the park at noon", "beach", False, 1 / 3),
        ("4", "red blue green yellow purple", "red blue green", True, 0.6),  # boundary: >= 0.6
        ("4", "red blue green yellow purple", "red blue", False, 0.4),
        ("3", "Likely yes; outdoors", "likely yes", True, 1.0),  # gold before ';' (overlap 'likely yes')
        ("5", None, "no information available", True, 1.0),
        ("5", None, "Caroline went hiking", False, 0.0),
    ],
)
def test_locomo_keyword_overlap(category: str, gold: str | None, prediction: str, correct: bool, score: float) -> None:
    verdict = run(locomo_keyword_overlap, locomo(category, gold), prediction)
    assert verdict.correct is correct
    assert verdict.score == pytest.approx(score)


def test_keyword_overlap_of_stopword_only_gold_is_zero() -> None:
    assert keyword_overlap("anything", "the and of") == 0.0


def test_locomo_bad_input_names_question_and_field() -> None:
    with pytest.raises(ValueError, match=r"'q1'.*'type_raw'"):
        run(locomo_f1, locomo("single_hop", "x"), "x")
    with pytest.raises(ValueError, match=r"'q1'.*'answer' is null"):
        run(locomo_f1, locomo("2", None), "x")


# ---- LongMemEval lexical judge (NOT the official judge) ---------------------------------------
@pytest.mark.parametrize(
    ("qtype", "qid", "gold", "prediction", "correct"),
    [
        ("single-session-user", "a1", "Target", "You got it at Target.", True),
        ("multi-session", "a2", "5", "15 days", False),  # whole tokens: '5' is not in '15'
        ("multi-session", "a3", "5", "It took 5 days", True),
        ("single-session-assistant", "a4", "The Great Gatsby", "great gatsby, I think", True),
        ("knowledge-update", "a5", "$50", "It cost 50 dollars", True),  # '$' is punctuation
        ("temporal-reasoning", "a6", "3 weeks", "about three weeks", False),  # lexical limit
        # abstention is routed by the id BEFORE the type: gold text is ignored
        ("temporal-reasoning", "a7_abs", "You never mentioned a car", "I don't know.", True),
        ("single-session-user", "a8_abs", "You never mentioned a car", "Information is not available", True),
        # the prediction contains the gold text, but an '_abs' question needs an abstention
        ("single-session-user", "a9_abs", "a Tesla", "You drive a Tesla", False),
    ],
)
def test_lme_contains_normalized(qtype: str, qid: str, gold: str, prediction: str, correct: bool) -> None:
    verdict = run(lme_contains_normalized, lme(qtype, gold, qid), prediction)
    assert verdict.correct is correct
    assert verdict.score == float(correct)


def test_lme_contains_normalized_abstention_phrase_list_is_pinned() -> None:
    q = lme("multi-session", "n/a", "x_abs")
    assert run(lme_contains_normalized, q, "That was never mentioned.").correct is True
    assert run(lme_contains_normalized, q, "You don’t know? I do").correct is True  # curly apostrophe
    assert run(lme_contains_normalized, q, "Two.").correct is False


def test_lme_contains_normalized_preference_is_not_applicable() -> None:
    verdict = run(lme_contains_normalized, lme("single-session-preference", "The user would prefer ..."), "x")
    assert verdict.correct is None and verdict.score is None
    assert verdict.details["applicable"] is False


# ---- multiple choice --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("gold", "predicted", "invalid", "correct", "details"),
    [
        (3, 3, False, True, {"predicted_index": 3, "gold_index": 3}),
        (3, 4, False, False, {"predicted_index": 4, "gold_index": 3}),
        (0, 0, False, True, {"predicted_index": 0, "gold_index": 0}),
        (3, None, True, False, {"invalid": True, "gold_index": 3}),  # invalid: status ok, flagged
    ],
)
def test_mc_accuracy(gold: int, predicted: int | None, invalid: bool, correct: bool, details: dict) -> None:
    verdict = run(mc_accuracy, mc(gold), "x", predicted_index=predicted, invalid=invalid)
    assert verdict.correct is correct
    assert verdict.score == float(correct)
    assert verdict.details == details


def test_confusion_matrix_has_invalid_row() -> None:
    cm = confusion_matrix([(1, 1), (2, 1), (None, 0), (None, 0), (9, 9)], n_choices=10)
    assert cm.rows[-1] == "invalid" and len(cm.rows) == 11 and cm.cols == tuple(range(10))
    assert cm.counts[1][1] == 1 and cm.counts[2][1] == 1 and cm.counts[9][9] == 1
    assert cm.counts[10][0] == 2
    assert sum(map(sum, cm.counts)) == 5
    assert cm.as_records()[10]["predicted"] == "invalid" and cm.as_records()[10]["0"] == 2
    with pytest.raises(ValueError, match="gold index 10"):
        confusion_matrix([(1, 10)])


# ---- registry and default selection -----------------------------------------------------------
def _cfg(**kw: object) -> BenchmarkConfig:
    return BenchmarkConfig(datasets=(DatasetConfig(name="locomo", loader="locomo", path="x"),), **kw)


class _LLM:
    model = "judge-model"

    def chat(self, *a: object, **k: object) -> None:  # never called by selection
        raise AssertionError

    def chat_many(self, *a: object, **k: object) -> None:
        raise AssertionError


@pytest.mark.parametrize(
    ("kind", "with_llm", "names"),
    [
        (KIND_MC10, False, [METRIC_MC_ACCURACY]),
        (KIND_MC10, True, [METRIC_MC_ACCURACY]),
        (KIND_LOCOMO, False, [METRIC_LOCOMO_F1, METRIC_LOCOMO_EXACT_MATCH, METRIC_LOCOMO_KEYWORD_OVERLAP]),
        (
            KIND_LOCOMO,
            True,
            [METRIC_LOCOMO_F1, METRIC_LOCOMO_EXACT_MATCH, METRIC_LOCOMO_KEYWORD_OVERLAP, METRIC_LOCOMO_LLM_JUDGE],
        ),
        (KIND_LONGMEMEVAL, False, [METRIC_LME_CONTAINS_NORMALIZED]),
        (KIND_LONGMEMEVAL, True, [METRIC_LME_CONTAINS_NORMALIZED, METRIC_LME_OFFICIAL_LLM_JUDGE]),
    ],
)
def test_default_judges(kind: str, with_llm: bool, names: list[str]) -> None:
    llm = _LLM() if with_llm else None
    assert [j.name for j in judges_for(kind, "locomo", resolve_config(_cfg()), llm)] == names  # type: ignore[arg-type]


def test_unavailable_llm_judges_are_reported_not_substituted() -> None:
    assert unavailable_judges(KIND_LONGMEMEVAL, resolve_config(_cfg()), None) == [
        (METRIC_LME_OFFICIAL_LLM_JUDGE, "no LLM configured (config has no 'llm:' block)")
    ]
    assert unavailable_judges(KIND_LONGMEMEVAL, resolve_config(_cfg()), _LLM()) == []  # type: ignore[arg-type]


def test_without_llm_judge_is_one_sentence_for_the_run_summary() -> None:
    """The sample's situation (no LLM): each dataset whose LLM judge cannot run is named once, with the judge;
    a config with an LLM, or with its own judges, has nothing to say."""
    datasets = (
        DatasetConfig(name="loco", loader="locomo", path="x"),
        DatasetConfig(name="mc", loader="locomo_mc10", path="x"),
        DatasetConfig(name="lme", loader="longmemeval", path="x"),
    )
    note = without_llm_judge(resolve_config(BenchmarkConfig(datasets=datasets)))
    assert note == (
        f"no LLM judge (the config has no 'llm:' block): loco ({METRIC_LOCOMO_LLM_JUDGE}), "
        f"lme ({METRIC_LME_OFFICIAL_LLM_JUDGE}); rule-based judges only"
    )
    llm = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m")
    assert without_llm_judge(resolve_config(BenchmarkConfig(datasets=datasets, llm=llm))) is None
    own = (ComponentConfig(name="f1", kind=METRIC_LOCOMO_F1),)
    assert without_llm_judge(resolve_config(BenchmarkConfig(datasets=datasets, judges=own))) is None


def test_config_judges_override_and_fail_loudly() -> None:
    cfg = _cfg(judges=(ComponentConfig(name="f1", kind=METRIC_LOCOMO_F1),))
    assert [j.name for j in judges_for(KIND_LOCOMO, "locomo", resolve_config(cfg), None)] == ["f1"]
    assert judges_for(KIND_MC10, "locomo", resolve_config(cfg), None) == []  # does not apply to MC
    llm_only = _cfg(judges=(ComponentConfig(name="j", kind=METRIC_LOCOMO_LLM_JUDGE),))
    with pytest.raises(JudgeConfigError, match="needs an LLM"):
        judges_for(KIND_LOCOMO, "locomo", resolve_config(llm_only), None)
    with pytest.raises(RegistryError, match="unknown judge 'f2'"):
        judges_for(KIND_LOCOMO, "locomo", resolve_config(_cfg(judges=(ComponentConfig(name="x", kind="f2"),))), None)
    bad = _cfg(judges=(ComponentConfig(name="f", kind=METRIC_LOCOMO_F1, params={"threshold": 1}),))
    unknown = r"judges\[0\] \(name: f\): params.threshold: unknown parameter; allowed: none"
    with pytest.raises(JudgeConfigError, match=unknown):
        judges_for(KIND_LOCOMO, "locomo", resolve_config(bad), None)
    model = _cfg(
        judges=(ComponentConfig(name="j", kind=METRIC_LOCOMO_LLM_JUDGE, params={"model": "gpt-4o"}),),
        llm=LLMConfig(base_url="http://localhost:1/v1", model="m"),
    )
    assert judges_for(KIND_LOCOMO, "locomo", resolve_config(model), _LLM())[0].llm_model == "gpt-4o"  # type: ignore[arg-type]


def test_judge_hash_changes_with_answer_and_definition() -> None:
    [f1] = judges_for(
        KIND_LOCOMO, "locomo", resolve_config(_cfg(judges=(ComponentConfig(name="f", kind=METRIC_LOCOMO_F1),))), None
    )
    assert f1.unit_hash("a") != f1.unit_hash("b")
    assert f1.unit_hash("a") == f1.unit_hash("a")


@pytest.mark.parametrize(
    ("loader", "kind"),
    [
        ("locomo", KIND_LOCOMO),
        ("locomo_mc10", KIND_MC10),
        ("longmemeval", KIND_LONGMEMEVAL),
        ("longmemeval_s", KIND_LONGMEMEVAL),
        ("beam", KIND_BEAM),
        ("locomo_plus", KIND_LOCOMO_PLUS),
    ],
)
def test_dataset_kind(loader: str, kind: str) -> None:
    assert dataset_kind(loader) == kind


def test_dataset_kind_unknown_is_an_error() -> None:
    with pytest.raises(JudgeConfigError, match="'squad'"):
        dataset_kind("squad")


def test_every_metric_is_registered_once_with_its_pinned_name() -> None:
    names = JUDGES.names()
    assert names == sorted(
        [
            METRIC_MC_ACCURACY,
            METRIC_LOCOMO_F1,
            METRIC_LOCOMO_EXACT_MATCH,
            METRIC_LOCOMO_KEYWORD_OVERLAP,
            METRIC_LOCOMO_LLM_JUDGE,
            METRIC_LME_OFFICIAL_LLM_JUDGE,
            METRIC_LME_LLM_JUDGE,
            METRIC_LME_CONTAINS_NORMALIZED,
            METRIC_MEM0_LOCOMO_JUDGE,
            METRIC_MEM0_LOCOMO_JUDGE_STRICT,
            METRIC_BEAM_OFFICIAL,
            METRIC_BEAM_RUBRIC_MEAN,
            METRIC_BEAM_EVENT_ORDERING,
            METRIC_LOCOMO_PLUS_JUDGE,
        ]
    )
    info = metric_info()
    assert info[METRIC_BEAM_OFFICIAL]["official_model"] == "gpt-4.1-mini"
    assert info[METRIC_LOCOMO_PLUS_JUDGE]["official_model"] == "gpt-4o-mini"
    # rubric-judged benchmarks have no judge without an LLM
    beam_llm_judges = (METRIC_BEAM_OFFICIAL, METRIC_BEAM_RUBRIC_MEAN, METRIC_BEAM_EVENT_ORDERING)
    assert DEFAULT_JUDGES[KIND_BEAM] == ((), beam_llm_judges)
    assert DEFAULT_JUDGES[KIND_LOCOMO_PLUS] == ((), (METRIC_LOCOMO_PLUS_JUDGE,))
    assert info[METRIC_LME_OFFICIAL_LLM_JUDGE]["official_model"] == "gpt-4o-2024-08-06"
    assert info[METRIC_MEM0_LOCOMO_JUDGE]["official_model"] == "gpt-4o-mini"
    assert info[METRIC_LOCOMO_F1]["aggregate"] == "mean_score"
    assert info[METRIC_LME_OFFICIAL_LLM_JUDGE]["needs_llm"] == "true"
    assert "OFFLINE" in info[METRIC_LME_CONTAINS_NORMALIZED]["description"]


def test_catalog_aggregate_rules_match_the_judges() -> None:
    """The catalog's views read each metric's aggregate rule from pipeline.metrics.aggregates (below the
    store); every built-in judge must carry the same rule, and every metric must be listed."""
    from pipeline.kinds.judges import BUILTIN_JUDGES
    from pipeline.metrics.aggregates import METRIC_AGGREGATES

    assert {s.metric: s.aggregate for s in BUILTIN_JUDGES} == dict(METRIC_AGGREGATES)
    from pipeline.metrics.aggregates import METRIC_FAMILIES

    assert {s.metric: s.kinds for s in BUILTIN_JUDGES} == dict(METRIC_FAMILIES)  # official views pick by family


def test_lme_judge_reading_param_is_validated_and_hashed() -> None:
    llm_block = LLMConfig(base_url="http://localhost:1/v1", model="m")

    def bound(params: dict[str, str]) -> str:
        judge = ComponentConfig(name="j", kind=METRIC_LME_OFFICIAL_LLM_JUDGE, params=params)
        [b] = judges_for(KIND_LONGMEMEVAL, "lme", resolve_config(_cfg(judges=(judge,), llm=llm_block)), _LLM())  # type: ignore[arg-type]
        return b.unit_hash("a")

    assert bound({}) != bound({"reading": "strict"})  # another reading recomputes the judgments
    with pytest.raises(JudgeConfigError, match=r"params.reading"):
        bound({"reading": "lenient"})
