"""MC10 label x LoCoMo category cross-check and the type_name rewrite it drives."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipeline.config.model import DatasetConfig
from pipeline.datasets import apply_mc10_crosscheck, convert_dataset, mc10_type_names, mc10_vs_locomo
from pipeline.datasets.crosscheck import CROSSCHECK_TABLE
from pipeline.datasets.samples import LOCOMO_FILE, MC10_FILE, SAMPLE_DIR
from pipeline.store.results import ResultStore

# hand-checked from sample_script.LOCOMO_QUESTIONS: categories 1/2/3/4/5 = 4/6/3/10/4 questions,
# and the sample MC10 file labels category n with the reported naive numbering
EXPECTED = [
    ("adversarial", "5", "adversarial", 4),
    ("multi_hop", "2", "temporal", 6),
    ("open_domain", "4", "single-hop", 10),
    ("single_hop", "1", "multi-hop", 4),
    ("temporal_reasoning", "3", "open-domain", 3),
]


@pytest.fixture
def converted(tmp_path: Path) -> tuple[ResultStore, list[DatasetConfig]]:
    store = ResultStore(results_dir=str(tmp_path / "results"))
    datasets = [
        DatasetConfig(name="locomo", loader="locomo", path=str(SAMPLE_DIR / LOCOMO_FILE)),
        DatasetConfig(name="mc10", loader="locomo_mc10", path=str(SAMPLE_DIR / MC10_FILE)),
    ]
    for ds in datasets:
        convert_dataset(ds, store, lambda _m: None)
    return store, datasets


def table_rows(t: pa.Table) -> list[tuple]:
    return [(r["mc10_label"], r["locomo_category"], r["locomo_type_name"], r["n"]) for r in t.to_pylist()]


def test_contingency_on_samples(converted: tuple[ResultStore, list[DatasetConfig]]) -> None:
    store, _ = converted
    t = mc10_vs_locomo(store.read_canonical("mc10", "questions"), store.read_canonical("locomo", "questions"))
    assert table_rows(t) == EXPECTED
    assert set(t.column("mapping").to_pylist()) == {"locomo_official"}


def test_match_requires_same_id_and_text(converted: tuple[ResultStore, list[DatasetConfig]]) -> None:
    store, _ = converted
    mc10 = store.read_canonical("mc10", "questions")
    locomo = store.read_canonical("locomo", "questions")
    texts = mc10.column("question").to_pylist()
    texts[0] = "  " + texts[0].upper() + " "  # case/whitespace differences still match
    texts[1] = "A different question?"  # same id, other text: not matched
    i = mc10.schema.get_field_index("question")
    changed = mc10.set_column(i, "question", pa.array(texts))
    t = mc10_vs_locomo(changed, locomo)
    assert sum(t.column("n").to_pylist()) == 26
    names = mc10_type_names(changed, locomo).column("type_name").to_pylist()
    assert names[0] == "temporal" and names[1] == "mc10:open_domain"


def test_type_names_rewritten_and_reset(converted: tuple[ResultStore, list[DatasetConfig]]) -> None:
    store, datasets = converted
    logs: list[str] = []
    [result] = apply_mc10_crosscheck(store, datasets, logs.append)
    assert (result.n_mc10, result.n_matched) == (27, 27)
    assert dict(result.label_to_category) == {
        "adversarial": "5",
        "multi_hop": "2",
        "open_domain": "4",
        "single_hop": "1",
        "temporal_reasoning": "3",
    }
    assert "27/27" in logs[0]
    questions = store.read_canonical("mc10", "questions")
    by_id = {r["question_id"]: r for r in questions.to_pylist()}
    assert (by_id["conv-1_q0"]["type_raw"], by_id["conv-1_q0"]["type_name"]) == ("multi_hop", "temporal")
    assert by_id["conv-1_q7"]["is_abstention"] and by_id["conv-1_q7"]["type_name"] == "adversarial"
    assert table_rows(store.read_canonical("mc10", CROSSCHECK_TABLE)) == EXPECTED
    files = [store.canonical_path("mc10", t) for t in ("questions", CROSSCHECK_TABLE)]
    stamps = [f.stat().st_mtime_ns for f in files]
    again = apply_mc10_crosscheck(store, datasets, lambda _m: None)[0]  # idempotent
    assert store.read_canonical("mc10", "questions").equals(questions) and again.n_matched == 27
    assert [f.stat().st_mtime_ns for f in files] == stamps  # same rows: files untouched (reruns stay free)
    # without a LoCoMo dataset the names fall back to the unverified MC10 labels
    [alone] = apply_mc10_crosscheck(store, datasets[1:], lambda _m: None)
    assert alone.n_matched == 0 and alone.label_to_category == {}
    names = store.read_canonical("mc10", "questions").column("type_name")
    assert pc.all(pc.starts_with(names, "mc10:")).as_py()
