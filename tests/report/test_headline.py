"""The report's first screen: one table across datasets, the papers' order, the best marked."""

from __future__ import annotations

from pipeline.report.headline_html import BEST_MARK, dataset_order, headline_table

METRICS = {"loco": "locomo_llm_judge", "mc": "mc_accuracy", "lme_s": "lme_official_llm_judge",
           "lme_oracle": "lme_official_llm_judge", "other": None}  # fmt: skip


def test_papers_order() -> None:
    shuffled = ["lme_s", "other", "mc", "lme_oracle", "loco"]
    assert dataset_order(shuffled, METRICS.get) == ["loco", "mc", "lme_oracle", "lme_s", "other"]


def _row(dataset: str, system: str, value: float | None, **kw: object) -> dict[str, object]:
    return {"dataset": dataset, "system": system, "reader": "r", "metric": METRICS[dataset], "headline_value": value,
            "ci_low": None, "ci_high": None, "failures_as_wrong": value, "n_failures_as_wrong": 0, **kw}  # fmt: skip


def test_best_marked_gaps_and_costs() -> None:
    rows = [
        _row("loco", "a", 0.7, usd_per_correct=0.002, tokens_per_correct=1500.0),
        _row("loco", "b", 0.5, failures_as_wrong=0.4, n_failures_as_wrong=3),
        _row("mc", "a", 0.3),
        _row("mc", "b", 0.9),
        _row("loco", "a", 0.1) | {"metric": "locomo_f1"},  # not the main metric: not shown
    ]
    html = headline_table(rows, METRICS.get)
    assert html.index(">loco <") < html.index(">mc <")
    assert html.count(BEST_MARK) == 2  # one best per dataset column
    assert f"{BEST_MARK}</span> <b>0.700</b>" in html and f"{BEST_MARK}</span> <b>0.900</b>" in html
    assert '<span class="sub">-0.200</span>' in html and '<span class="sub">-0.600</span>' in html
    assert '0.400 <span class="sub">3 as wrong</span>' in html
    assert "$0.0020 · 1,500 tok" in html
    assert "0.100" not in html
