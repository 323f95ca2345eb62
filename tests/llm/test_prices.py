"""cost_usd (pinned formula, hand-checked table) and the prices file loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.llm.prices import ModelPrice, PriceTableError, cost_usd, load_prices

PRICES = {
    "m": ModelPrice(input_per_1m=2.0, output_per_1m=10.0),
    "gpt-4o-mini": ModelPrice(input_per_1m=0.15, output_per_1m=0.60),
    "local-llama": ModelPrice(input_per_1m=0.0, output_per_1m=0.0),
}


@pytest.mark.parametrize(
    ("model", "prompt", "completion", "expected"),
    [
        # (1000 * 2.0 + 500 * 10.0) / 1e6 = 7000 / 1e6
        ("m", 1000, 500, 0.007),
        # (3 * 2 + 1 * 10) / 1e6
        ("m", 3, 1, 0.000016),
        # one million of each at 0.15 and 0.60
        ("gpt-4o-mini", 1_000_000, 1_000_000, 0.75),
        ("m", 0, 0, 0.0),
        # a model declared free costs exactly 0
        ("local-llama", 123, 456, 0.0),
        # unknown model: unknown cost, not 0
        ("not-in-table", 1000, 500, None),
        # server omitted usage: unknown cost
        ("m", None, 500, None),
        ("m", 1000, None, None),
    ],
)
def test_cost_usd_table(model: str, prompt: int | None, completion: int | None, expected: float | None) -> None:
    got = cost_usd(model, prompt, completion, PRICES)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_repo_prices_file_loads(project_root: Path) -> None:
    prices = load_prices(project_root / "configs" / "prices.yaml")
    assert prices["gpt-4o-mini"] == ModelPrice(0.15, 0.60)
    assert all(p.input_per_1m >= 0 and p.output_per_1m >= 0 for p in prices.values())


def test_load_prices_reads_models(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("models:\n  a: {input_per_1m: 1, output_per_1m: 2.5}\n")
    assert load_prices(path) == {"a": ModelPrice(1.0, 2.5)}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[1, 2]", "'models' mapping"),
        ("other: {}", "'models' mapping"),
        ("models:\n  a: 3\n", "model 'a': expected a mapping"),
        ("models:\n  a: {input_per_1m: -1, output_per_1m: 1}\n", "'input_per_1m' must be >= 0"),
        ("models:\n  a: {input_per_1m: '1', output_per_1m: 1}\n", "'input_per_1m' must be a number"),
        ("models:\n  a: {input_per_1m: 1, output_per_1m: true}\n", "'output_per_1m' must be a number"),
        ("models:\n  a: {input_per_1m: 1}\n", "'output_per_1m' must be a number"),
        ("models:\n  a: {input_per_1m: 1, output_per_1m: 1, cached: 0}\n", "unknown field(s) ['cached']"),
        ("models: [unclosed", "not valid YAML"),
    ],
)
def test_load_prices_errors_name_file_model_field(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(PriceTableError) as exc:
        load_prices(path)
    assert needle in str(exc.value)
    assert str(path) in str(exc.value)


def test_load_prices_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PriceTableError, match="prices file not found"):
        load_prices(tmp_path / "nope.yaml")
