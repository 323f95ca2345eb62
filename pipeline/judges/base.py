"""Judge contract: pinned metric names, the verdict record, the registry and default selection.

Why pinned names: a report column "locomo_f1" must mean exactly one computation in every run;
each judge is ONE function registered under its metric name, with a ``version`` that is hashed
into the judgment's config so that changing a definition recomputes its rows.

Outcomes of judging one answer:
- a Verdict (status ok): ``correct`` True/False and ``score``; ``correct`` None means "not
  applicable to this question" (e.g. a lexical judge on a rubric gold), excluded from accuracy;
- JudgeFailed raised (status failed, retried next run): the LLM call failed or its reply was not
  a clear label. A failure is never scored as wrong. An unclear reply raises the subclass
  UnparseableVerdict AFTER the reply is discarded from the LLM cache, so the next run asks again
  (instead of replaying the same unusable reply at zero requests); reports count these rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, create_model

from pipeline.config.identity import endpoint_settings
from pipeline.config.model import LLMConfig
from pipeline.core.families import (
    FAMILY_BEAM,
    FAMILY_LOCOMO,
    FAMILY_LOCOMO_PLUS,
    FAMILY_LONGMEMEVAL,
    FAMILY_MC10,
    UnknownFamilyError,
    dataset_family,
)
from pipeline.core.records import QuestionRow
from pipeline.metrics.aggregates import (  # noqa: F401 - the pinned names, re-exported for every judge module
    AGG_ACCURACY,
    AGG_MEAN_SCORE,
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
)
from pipeline.readers.base import LLMClient

# dataset kinds = dataset families of the loaders (one rule: pipeline.core.families)
KIND_MC10 = FAMILY_MC10
KIND_LOCOMO = FAMILY_LOCOMO
KIND_LONGMEMEVAL = FAMILY_LONGMEMEVAL
KIND_BEAM = FAMILY_BEAM
KIND_LOCOMO_PLUS = FAMILY_LOCOMO_PLUS

DEFAULT_JUDGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # kind: (judges without an LLM, judges added when an LLM is configured)
    KIND_MC10: ((METRIC_MC_ACCURACY,), ()),
    KIND_LOCOMO: (
        (METRIC_LOCOMO_F1, METRIC_LOCOMO_EXACT_MATCH, METRIC_LOCOMO_KEYWORD_OVERLAP),
        (METRIC_LOCOMO_LLM_JUDGE,),
    ),
    KIND_LONGMEMEVAL: ((METRIC_LME_CONTAINS_NORMALIZED,), (METRIC_LME_OFFICIAL_LLM_JUDGE,)),
    # rubric-judged: no judge without an LLM (the report lists these as unavailable then)
    KIND_BEAM: ((), (METRIC_BEAM_OFFICIAL, METRIC_BEAM_RUBRIC_MEAN, METRIC_BEAM_EVENT_ORDERING)),
    KIND_LOCOMO_PLUS: ((), (METRIC_LOCOMO_PLUS_JUDGE,)),
}


class JudgeFailed(RuntimeError):
    """No verdict could be obtained (LLM transport failure, or a reply that is not a clear label)."""


class UnparseableVerdict(JudgeFailed):
    """The judge LLM answered, but its reply holds no verdict (e.g. "Maybe"); never cached.

    The stored error is "<class name>: <message>" (pipeline.run.stage.timed), so it starts with
    pipeline.core.status.UNPARSEABLE_ERROR_PREFIX, which the report counts (n_unparseable_verdict).
    """


class JudgeConfigError(ValueError):
    """The ``judges:`` config is invalid (unknown params, an LLM judge without an LLM, ...)."""


@dataclass(frozen=True)
class JudgeInput:
    """What a judge sees: the question (with gold fields) and the reader's answer."""

    question: QuestionRow
    prediction: str | None
    predicted_index: int | None = None
    invalid: bool = False


@dataclass(frozen=True)
class Verdict:
    correct: bool | None  # None = not applicable to this question (excluded from accuracy)
    score: float | None
    details: dict[str, Any] = field(default_factory=dict)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cache_hit: bool | None = None


@dataclass(frozen=True)
class JudgeContext:
    """Run-time dependencies of a judge: the LLM (None when not configured) and its params."""

    llm: LLMClient | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    repeat: int = 1  # which repeat of the judge (``repeats``): r >= 2 asks an LLM judge with sampling seed r
    model: str | None = None  # the model an LLM judge asks (judge_model); None: the client's default


JudgeFn = Callable[[JudgeInput, JudgeContext], Verdict]


@dataclass(frozen=True)
class JudgeSpec:
    """A registered judge: its metric, the dataset kinds it applies to, and its one function."""

    metric: str
    kinds: frozenset[str]
    fn: JudgeFn
    description: str
    aggregate: str
    version: str
    needs_llm: bool = False
    allowed_params: frozenset[str] = frozenset()
    fingerprint: str = ""  # hash of prompts / constants the definition depends on
    official_model: str | None = None  # the model the published protocol used (recorded in reports; not asked)
    # the judges' endpoint settings its calls take (pipeline/llm/identity.py): the model (unless its
    # params name one) and the tag; the temperature is fixed by every protocol here, the reply cap by most
    llm_fields: tuple[str, ...] = ("model", "model_tag")
    # strict model of the judge's ``params``; None = generated from ``allowed_params`` (each optional)
    params_model: type[BaseModel] | None = None


def judge_model(params: Mapping[str, Any], endpoint_model: str | None) -> str | None:
    """The model an LLM judge asks: its ``model`` param, else the judges' endpoint's (``judge_llm.model``,
    else ``llm.model``). No judge keeps a model of its own: the protocol's model is ``official_model``,
    reported beside the one asked. The one rule: binding a judge and the manifest both use it."""
    return params.get("model") or endpoint_model


@cache
def judge_params_model(spec: JudgeSpec) -> type[BaseModel]:
    """The params model a judge's config entry is validated with (strict: an unknown key fails)."""
    if spec.params_model is not None:
        return spec.params_model
    fields: dict[str, Any] = {name: (Any, None) for name in sorted(spec.allowed_params)}
    return create_model(f"{spec.metric}_params", __config__=ConfigDict(extra="forbid", frozen=True), **fields)


def dataset_kind(loader: str) -> str:
    """Dataset kind from the configured loader name (pipeline.core.families.dataset_family)."""
    try:
        return dataset_family(loader)
    except UnknownFamilyError as exc:
        raise JudgeConfigError(str(exc)) from None


@dataclass(frozen=True)
class BoundJudge:
    """A judge instance of the config: ``name`` is its unit name, ``spec`` the registered judge."""

    name: str
    spec: JudgeSpec
    params: Mapping[str, Any]
    llm_model: str | None
    llm_extra: Mapping[str, Any] = field(default_factory=dict)  # non-default endpoint settings its calls take

    def unit_hash(self, answer_hash: str) -> str:
        """Answer unit hash + judge definition (+ judge model and the non-default endpoint settings its
        calls take): any change recomputes the row; rows made with default settings keep their hash."""
        parts: dict[str, Any] = {
            "answer": answer_hash,
            "judge": self.spec.metric,
            "version": self.spec.version,
            "fingerprint": self.spec.fingerprint,
            "params": dict(self.params),
            "llm_model": self.llm_model if self.spec.needs_llm else None,
        }
        if self.spec.needs_llm and self.llm_extra:
            parts["llm_extra"] = dict(self.llm_extra)
        blob = json.dumps(parts, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def settings(self, endpoint: LLMConfig | None, block: str) -> dict[str, Any]:
        """The judgment unit's own identity inputs by config path (the manifest's record); ``block``
        names the judges' endpoint (``judge_llm`` or ``llm``)."""
        out: dict[str, Any] = {
            f"judges[{self.name}] metric": self.spec.metric,
            f"judges[{self.name}].params": dict(self.params),
            f"judges[{self.name}] code version": [self.spec.version, self.spec.fingerprint],
        }
        if self.spec.needs_llm:
            out[f"judges[{self.name}] model"] = self.llm_model
            out.update(endpoint_settings(block, endpoint, [f for f in self.spec.llm_fields if f != "model"]))
        return out


def text_fingerprint(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:12]


# payload columns of the ``judgments`` stage table (unit = "<system>/<reader>/<judge>")
JUDGMENTS_PAYLOAD = pa.schema(
    [
        ("system", pa.string()),
        ("reader", pa.string()),
        ("judge", pa.string()),
        ("metric", pa.string()),  # pinned metric name (METRIC_* above)
        ("correct", pa.bool_()),  # null = not applicable to this question
        ("score", pa.float64()),
        ("details", pa.string()),  # JSON object; {"invalid": true} for an invalid MC answer
        ("judge_prompt_tokens", pa.int64()),
        ("judge_completion_tokens", pa.int64()),
        ("judge_cache_hit", pa.bool_()),
    ]
)
