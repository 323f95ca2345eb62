"""LLM prices (USD per 1M tokens) and the one cost formula every report uses.

Why a YAML table and a pure function: prices change and differ per provider, so they are data
(``configs/prices.yaml``), not code; and a cost that is unknown must stay unknown. A model that
is missing from the table costs ``None``, never ``0``: summing a silent zero would under-report
a run's spend. Local models (Ollama, vLLM, llama.cpp) are free only when listed with price 0.

Pinned metric ``cost_usd``:
    (prompt_tokens * input_per_1m + completion_tokens * output_per_1m) / 1_000_000
``None`` when the model is not priced or the server did not report either token count.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

TOKENS_PER_UNIT = 1_000_000


class PriceTableError(ValueError):
    """The prices file is missing or invalid (the message names the file, model and field)."""


@dataclass(frozen=True)
class ModelPrice:
    """USD per 1M input (prompt) and output (completion) tokens of one model."""

    input_per_1m: float
    output_per_1m: float


def cost_usd(
    model: str,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    prices: Mapping[str, ModelPrice],
) -> float | None:
    """Cost of one call in USD; ``None`` when unknown (unpriced model or missing usage)."""
    price = prices.get(model)
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return (prompt_tokens * price.input_per_1m + completion_tokens * price.output_per_1m) / TOKENS_PER_UNIT


def load_prices(path: str | Path) -> dict[str, ModelPrice]:
    """Read ``{models: {<model>: {input_per_1m, output_per_1m}}}``; errors name file/model/field."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise PriceTableError(f"prices file not found: {p}") from None
    except yaml.YAMLError as exc:
        raise PriceTableError(f"{p}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("models"), dict):
        raise PriceTableError(f"{p}: top level must be a mapping with a 'models' mapping")
    return {str(name): _parse_price(p, str(name), entry) for name, entry in raw["models"].items()}


def _parse_price(path: Path, model: str, entry: object) -> ModelPrice:
    if not isinstance(entry, dict):
        raise PriceTableError(f"{path}: model {model!r}: expected a mapping, got {type(entry).__name__}")
    unknown = sorted(set(entry) - {"input_per_1m", "output_per_1m"})
    if unknown:
        raise PriceTableError(f"{path}: model {model!r}: unknown field(s) {unknown}")
    return ModelPrice(
        input_per_1m=_price_field(path, model, entry, "input_per_1m"),
        output_per_1m=_price_field(path, model, entry, "output_per_1m"),
    )


def _price_field(path: Path, model: str, entry: dict[str, object], name: str) -> float:
    value = entry.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PriceTableError(f"{path}: model {model!r}: field {name!r} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise PriceTableError(f"{path}: model {model!r}: field {name!r} must be >= 0, got {value!r}")
    return float(value)


@functools.lru_cache(maxsize=16)
def _table(path: Path, size: int, mtime_ns: int) -> dict[str, ModelPrice]:
    return load_prices(path)


def price_of(path: Path, model: str | None) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens of ``model`` in the prices file ``path``; None when it is
    unpriced or the file is absent. Part of the identity of every unit that stores a cost: a
    corrected price recomputes those rows (from the LLM cache: no request)."""
    if model is None or not path.is_file():
        return None
    stat = path.stat()
    price = _table(path, stat.st_size, stat.st_mtime_ns).get(model)
    return None if price is None else (price.input_per_1m, price.output_per_1m)
