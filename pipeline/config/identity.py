"""Which config settings are part of a stored row's identity, declared once for every config field.

Why: "reruns are free" must never mean "stale". A stored row is reused when its unit hash is
unchanged, and an LLM reply when its cache key is; a setting that changes a row but is in neither
(once: the reader's temperature) makes a rerun keep rows made under other settings. Every field of
``BenchmarkConfig`` has one class here (tests/config/test_identity.py fails on a field without one
and flips each field on a real results folder to check what it recomputes):

- ``IDENTITY``: changes what a stored row holds, so it is in that row's unit hash (and, for
  endpoint settings, in the LLM cache key: the same fields, ``ENDPOINT_IDENTITY_FIELDS``).
- ``OPERATIONAL``: changes how or how fast rows are made, never what they hold.
- ``SELECTION``: changes which questions or (component, dataset) pairs exist, never a stored row.
- ``NAMING``: names and places: a renamed entry is a new entry (its rows are computed under the
  new name, from the LLM cache: no name is in a cache key); a stored row never changes.
- ``REPORT``: read only when report tables are derived from stored rows (recomputed every time).

A unit's identity also covers what no config field holds: code versions, prompt fingerprints, a
product library's installed version, the price of the model it asks (costs are stored with rows).

Decided: ``base_url`` is OPERATIONAL. The model name is what identifies a model; moving a server
(another port, a proxy, a provider's new host) must not discard paid results. When one name means
two models (two quantizations behind one name), say so with ``model_tag``: an IDENTITY field, in
every cache key and unit hash of that endpoint.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, get_args, get_origin

from pydantic import BaseModel

from pipeline.config.model import BenchmarkConfig, LLMConfig

IDENTITY: Final = "identity"
OPERATIONAL: Final = "operational"
SELECTION: Final = "selection"
NAMING: Final = "naming"
REPORT: Final = "report"
CLASSES = (IDENTITY, OPERATIONAL, SELECTION, NAMING, REPORT)

# What an endpoint sends that shapes a reply: the LLM cache key hashes the request made from these,
# and every unit whose requests use one of them has it in its unit hash (when not its default).
ENDPOINT_IDENTITY_FIELDS: tuple[str, ...] = ("model", "temperature", "max_tokens", "model_tag")


@dataclass(frozen=True)
class FieldRule:
    """The class of one config field and why; ``feeds``: the stages whose rows it is an input of."""

    cls: str
    why: str
    feeds: tuple[str, ...] = ()


_PER_QUESTION = ("ingestion", "retrievals", "answers", "judgments")
_KEY = "the key is read from this variable at call time; never stored"
_TIMING = "how long to wait or how often to try; a reply is the same whenever it arrives"
_RATE = "how fast requests go; a reply does not depend on its neighbours"


def _endpoint(block: str, feeds: tuple[str, ...]) -> dict[str, FieldRule]:
    who = "the judges'" if block == "judge_llm" else "the readers' and LLM memory systems'"
    return {
        f"{block}.base_url": FieldRule(OPERATIONAL, "where the model is served; model (and model_tag) say which"),
        f"{block}.model": FieldRule(IDENTITY, f"{who} model", feeds),
        f"{block}.temperature": FieldRule(IDENTITY, "sampling temperature of calls that do not fix it", feeds),
        f"{block}.max_tokens": FieldRule(IDENTITY, "reply cap of calls that do not set their own", feeds),
        f"{block}.model_tag": FieldRule(IDENTITY, "what the model name alone does not say (a quantization)", feeds),
        f"{block}.api_key_env": FieldRule(OPERATIONAL, _KEY),
        f"{block}.timeout_s": FieldRule(OPERATIONAL, _TIMING),
        f"{block}.connect_timeout_s": FieldRule(OPERATIONAL, _TIMING),
        f"{block}.max_retries": FieldRule(OPERATIONAL, _TIMING),
        f"{block}.unreachable_retries": FieldRule(OPERATIONAL, _TIMING),
        f"{block}.probe_after_s": FieldRule(
            OPERATIONAL, "when a silent request is joined by a probe of the endpoint; a reply is the same"
        ),
        f"{block}.max_concurrency": FieldRule(OPERATIONAL, _RATE),
        f"{block}.requests_per_minute": FieldRule(OPERATIONAL, _RATE),
        f"{block}.tokens_per_minute": FieldRule(OPERATIONAL, _RATE),
        f"{block}.stop_after_unreachable": FieldRule(
            OPERATIONAL, "when a stage gives up on a dead endpoint; the questions not attempted fail and are retried"
        ),
    }


def _component(section: str, feeds: tuple[str, ...]) -> dict[str, FieldRule]:
    repeats = (
        FieldRule(IDENTITY, "repeat r >= 2 is its own unit (its own sampling seed)", feeds)
        if section != "memory_systems"
        else FieldRule(IDENTITY, "must stay 1 for memory systems (a config error otherwise)", ())
    )
    cutoffs = (
        FieldRule(IDENTITY, "each depth c is a unit <system>@<c> read from the system's one retrieval", feeds[1:])
        if section == "memory_systems"
        else FieldRule(IDENTITY, "must stay empty for readers and judges (a config error otherwise)", ())
    )
    return {
        f"{section}[].name": FieldRule(NAMING, "the unit's name; a renamed entry is a new entry"),
        f"{section}[].cutoffs": cutoffs,
        f"{section}[].kind": FieldRule(IDENTITY, "which implementation (its code version is in the hash too)", feeds),
        f"{section}[].params": FieldRule(IDENTITY, "every param, code defaults filled in", feeds),
        f"{section}[].datasets": FieldRule(SELECTION, "which datasets the entry runs on"),
        f"{section}[].repeats": repeats,
    }


FIELDS: Mapping[str, FieldRule] = {
    "name": FieldRule(NAMING, "prefixes the Dagster asset keys; the rows live in results_dir"),
    "results_dir": FieldRule(NAMING, "where results live; another folder is another, empty store"),
    "source": FieldRule(NAMING, "the file the config was read from (set when loading)"),
    "datasets[].name": FieldRule(NAMING, "prefixes the dataset's partition keys"),
    "datasets[].loader": FieldRule(IDENTITY, "how the raw file becomes canonical records", ("canonical",)),
    "datasets[].path": FieldRule(
        OPERATIONAL,
        "where the file is; its content is identity: each question's record hash covers its canonical record, "
        "so an edited file recomputes exactly the questions whose records changed",
    ),
    "datasets[].limit": FieldRule(SELECTION, "which questions are in the run"),
    "datasets[].limit_per_type": FieldRule(SELECTION, "which questions are in the run"),
    "datasets[].question_ids": FieldRule(SELECTION, "which questions are in the run"),
    "datasets[].index_roles": FieldRule(IDENTITY, "which turns memories index", _PER_QUESTION),
    "embeddings.model": FieldRule(IDENTITY, "the vectors' model (in the recorded variant)", ("embeddings",)),
    "embeddings.backend": FieldRule(IDENTITY, "fp32 / bf16 / int8 vectors (in the recorded variant)", ("embeddings",)),
    "embeddings.max_seq_length": FieldRule(IDENTITY, "truncation (in the recorded variant)", ("embeddings",)),
    "embeddings.batch_size": FieldRule(
        OPERATIONAL, "vectors are cached by text: a batch moves them in the last bits only (cosine >= 0.99998)"
    ),
    "embeddings.device": FieldRule(
        OPERATIONAL, "vectors are cached by text; another device moves them in the last bits, as a batch does"
    ),
    "embeddings.num_threads": FieldRule(OPERATIONAL, "how fast vectors are computed"),
    "embeddings.workers": FieldRule(OPERATIONAL, "how fast vectors are computed"),
    **_component("memory_systems", _PER_QUESTION),
    **_component("readers", ("answers", "judgments")),
    **_component("judges", ("judgments",)),
    **_endpoint("llm", _PER_QUESTION),
    **_endpoint("judge_llm", ("judgments",)),
    "retrieval_k": FieldRule(REPORT, "the cut-offs of the retrieval metrics, derived from stored rankings"),
    "prices_path": FieldRule(
        OPERATIONAL, "where the price table is; the price of the model a unit asks is in that unit's identity"
    ),
}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside ``annotation`` (``X``, ``X | None``, ``tuple[X, ...]``), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) is not None or get_args(annotation):
        for arg in get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


def _is_sequence(annotation: Any) -> bool:
    return any(get_origin(a) is tuple for a in (annotation, *get_args(annotation)))


def schema_paths(model: type[BaseModel] = BenchmarkConfig, prefix: str = "") -> Iterator[str]:
    """Every leaf field of the config schema as a path (``llm.temperature``, ``datasets[].path``).

    A component's ``params`` is one leaf: each kind's params model is its own, and all of it is identity."""
    for name, info in model.model_fields.items():
        nested = _model_of(info.annotation)
        path = f"{prefix}{name}"
        if nested is None:
            yield path
        else:
            yield from schema_paths(nested, f"{path}[]." if _is_sequence(info.annotation) else f"{path}.")


def undeclared_fields() -> list[str]:
    """Config fields without a class here (must be empty: tests/config/test_identity.py)."""
    return [p for p in schema_paths() if p not in FIELDS]


def endpoint_identity(llm: LLMConfig | None, fields: Iterable[str] = ENDPOINT_IDENTITY_FIELDS) -> dict[str, Any]:
    """The settings of ``llm`` among ``fields`` (ENDPOINT_IDENTITY_FIELDS) that differ from their defaults.

    Why only the non-default ones: a unit hash made before a field entered it holds the default
    value implicitly, so rows made with the defaults keep their hash (and are reused), and any
    other value changes it. ``model`` has no default: asked for, it is always in."""
    if llm is None:
        return {}
    defaults = LLMConfig.model_fields
    unknown = set(fields) - set(ENDPOINT_IDENTITY_FIELDS)
    if unknown:
        raise ValueError(f"not endpoint identity fields: {sorted(unknown)}")
    return {name: getattr(llm, name) for name in fields if getattr(llm, name) != defaults[name].default}


def endpoint_settings(block: str, llm: LLMConfig | None, fields: Iterable[str]) -> dict[str, Any]:
    """``{"<block>.<field>": value}`` of ``fields`` (all values, defaults too): what a unit's rows
    were made with, as the manifest records it and ``membench verify`` names it."""
    return {f"{block}.{name}": getattr(llm, name) if llm is not None else None for name in fields}


def differing(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The settings (paths) whose values differ, sorted; a setting present on one side only counts."""
    return sorted(k for k in set(stored) | set(current) if stored.get(k) != current.get(k))
