"""The LLM part of a unit's identity: which endpoint settings a component's calls take, and its price.

Why one place for memory systems, readers and judges: each takes some settings from its endpoint
(``llm:`` or ``judge_llm:``) and sets or fixes the others itself (a reader's own ``max_tokens``, a
judge's protocol temperature). A setting the calls take is in the unit hash; one they never take is
not, so changing it recomputes nothing (pipeline/config/identity.py declares every field's class).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.config.identity import ENDPOINT_IDENTITY_FIELDS, endpoint_identity
from pipeline.config.model import BenchmarkConfig, LLMConfig
from pipeline.llm.prices import price_of


def llm_fields(cls: type, params: Mapping[str, Any]) -> tuple[str, ...]:
    """The endpoint settings ``cls``'s calls take from its endpoint (ENDPOINT_IDENTITY_FIELDS):
    its ``llm_fields(params)`` classmethod when it has one; else all of them for a class that
    ``uses_llm`` (a plugin that says nothing is assumed to take every one), else none."""
    hook = getattr(cls, "llm_fields", None)
    if hook is not None:
        return tuple(hook(params))
    return ENDPOINT_IDENTITY_FIELDS if getattr(cls, "uses_llm", False) else ()


def not_set(params: Mapping[str, Any], *names: str) -> tuple[str, ...]:
    """Of ``names`` (params named like endpoint settings), those the params leave to the endpoint."""
    return tuple(n for n in names if params.get(n) is None)


def hash_extras(endpoint: LLMConfig | None, fields: Iterable[str], hashed_already: Iterable[str]) -> dict[str, Any]:
    """The non-default endpoint settings among ``fields`` that a unit hash does not hold yet."""
    done = set(hashed_already)
    return endpoint_identity(endpoint, [f for f in fields if f not in done])


def asked_model(params: Mapping[str, Any], endpoint: LLMConfig | None) -> str | None:
    """The model a component's calls ask: its own ``model`` param, else its endpoint's."""
    return params.get("model") or (endpoint.model if endpoint is not None else None)


def price_identity(cfg: BenchmarkConfig, model: str | None) -> dict[str, Any]:
    """``{"price": [input, output]}`` when ``model`` is priced, else nothing: rows that store a cost
    are recomputed (from the LLM cache) when its price is corrected."""
    price = price_of(cfg.resolved_prices_path(), model)
    return {} if price is None else {"price": list(price)}
