"""Typed, strict parameters for memory systems (the ``params`` block of a config entry).

Why strict: a misspelt parameter (``topk: 5``) must fail the run at start, not silently fall back
to the default and benchmark a different system than the one declared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

P = TypeVar("P", bound="SystemParams")


class SystemParams(BaseModel):
    """Base of every memory system's params model: unknown keys fail, instances are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# what a memory system is built with: a config's raw params block, or its parsed params model
ParamsInput = Mapping[str, Any] | BaseModel


class MemoryConfigError(ValueError):
    """A memory system's configuration is invalid (bad params, missing LLM or encoder)."""


def parse_params(model: type[P], params: ParamsInput, kind: str) -> P:
    """``params`` validated with ``model``; an instance of ``model`` is returned as is.

    Why the pass-through: a config's params are parsed once, when the config is resolved
    (pipeline/kinds/resolve.py), and the parsed model is what systems are built with; parsing
    it again in every constructor would be the repeated work the resolver exists to remove.
    """
    if isinstance(params, model):
        return params
    if isinstance(params, BaseModel):
        raise MemoryConfigError(
            f"memory system kind {kind!r}: params are a {type(params).__name__}, expected {model.__name__}"
        )
    try:
        return model(**params)
    except ValidationError as exc:
        raise MemoryConfigError(f"memory system kind {kind!r}: invalid params {dict(params)}: {exc}") from None
