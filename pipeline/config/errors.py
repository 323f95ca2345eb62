"""A config file's validation errors as one line naming the entry and the key, never pydantic's text.

Why: ``membench check-config``, ``dagster job execute`` and ``dagster dev`` all load the config
through pipeline.config.model.load_config; a misspelled key (``memory_sytems``) must read the same
everywhere: where it is (``datasets[0].limt``), what is wrong, and the key that was probably meant.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Sequence
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (``X | None``, ``tuple[X, ...]`` unwrapped)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if get_origin(annotation) in (Union, types.UnionType, tuple, list):
        return [m for a in get_args(annotation) for m in _models_in(a)]
    return []


def _model_at(model: type[BaseModel], loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The model whose fields hold the last element of ``loc`` (list indexes skipped)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        field = current.model_fields.get(part)
        models = _models_in(field.annotation) if field is not None else []
        current = models[0] if models else None
    return current


def location(loc: Sequence[int | str]) -> str:
    """``('datasets', 0, 'limt')`` -> ``datasets[0].limt``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _unknown_key(model: type[BaseModel], loc: Sequence[int | str]) -> str:
    owner = _model_at(model, loc[:-1])
    fields = sorted(owner.model_fields) if owner is not None else []
    fields = [f for f in fields if f != "source"]
    close = difflib.get_close_matches(str(loc[-1]), fields, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{location(loc)}: unknown key ({hint}keys here: {', '.join(fields)})"


def describe(exc: ValidationError, model: type[BaseModel]) -> str:
    """Every error of ``exc`` as ``<entry.key>: <what is wrong>``, joined by "; " on one line."""
    parts = []
    for err in exc.errors():
        loc = err["loc"]
        if err["type"] == "extra_forbidden" and loc:
            parts.append(_unknown_key(model, loc))
            continue
        msg = " ".join(err["msg"].removeprefix("Value error, ").split())
        shown = f" (got {err['input']!r:.80})" if loc and err["type"] != "missing" else ""
        parts.append(f"{location(loc) or 'config'}: {msg}{shown}")
    return "; ".join(parts)
