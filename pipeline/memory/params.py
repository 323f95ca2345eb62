"""Typed, strict parameters for memory systems (the ``params`` block of a config entry).

Why strict: a misspelt parameter (``topk: 5``) must fail the run at start, not silently fall back
to the default and benchmark a different system than the one declared.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

P = TypeVar("P", bound="SystemParams")


class SystemParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MemoryConfigError(ValueError):
    """A memory system's configuration is invalid (bad params, missing LLM or encoder)."""


def parse_params(model: type[P], params: dict[str, Any], kind: str) -> P:
    try:
        return model(**params)
    except ValidationError as exc:
        raise MemoryConfigError(f"memory system kind {kind!r}: invalid params {params}: {exc}") from None
