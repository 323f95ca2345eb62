"""Cross-check of LoCoMo-MC10 question labels against LoCoMo's own categories.

Why: MC10's ``question_type`` labels are reported to follow a naive numbering of LoCoMo's
categories (its ``multi_hop`` holding LoCoMo's category-2 = temporal questions, ...). Reporting
MC10 scores under its labels would then mislabel every bucket. We never assume the relation: we
match MC10 questions to LoCoMo questions by ``question_id`` AND question text (whitespace- and
case-normalized), tabulate label x category, and name each matched MC10 question by the official
LoCoMo name of ITS matched category (pipeline.datasets.categories). Unmatched questions keep the
unverified ``"mc10:<label>"``.

The canonical asset calls ``apply_mc10_crosscheck(store, datasets, log)`` after every dataset is
converted; it rewrites ``canonical/<mc10>/questions.parquet`` (``type_name``, ``is_abstention``)
and writes ``canonical/<mc10>/mc10_crosscheck.parquet`` (the contingency table). The rewrite is
a pure function of ``type_raw`` and the LoCoMo questions, so re-running it is idempotent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config.model import DatasetConfig
from pipeline.core.families import FAMILY_LOCOMO, FAMILY_MC10, dataset_family
from pipeline.datasets.categories import (
    ADVERSARIAL_CATEGORY,
    LOCOMO_CATEGORY_MAPPING,
    MC10_ADVERSARIAL_LABEL,
    locomo_type_name,
    mc10_unverified_name,
)
from pipeline.store.results import ResultStore, write_parquet_atomic

CROSSCHECK_TABLE = "mc10_crosscheck"

CROSSCHECK_SCHEMA = pa.schema(
    [
        ("mc10_label", pa.string()),
        ("locomo_category", pa.string()),
        ("locomo_type_name", pa.string()),
        ("mapping", pa.string()),
        ("n", pa.int64()),
    ]
)


def normalize_question(text: str) -> str:
    """Case- and whitespace-insensitive form used to confirm an id match."""
    return " ".join(text.split()).casefold()


def match_locomo(mc10_questions: pa.Table, locomo_questions: pa.Table) -> dict[str, str]:
    """MC10 question_id -> LoCoMo ``type_raw`` for ids present in both with the same text."""
    # (id, text) -> category; several LoCoMo datasets (e.g. the samples and the real file) may
    # reuse an id with other texts, so the text is part of the key, not a post-check
    locomo = {
        (qid, normalize_question(q)): raw
        for qid, q, raw in zip(
            locomo_questions.column("question_id").to_pylist(),
            locomo_questions.column("question").to_pylist(),
            locomo_questions.column("type_raw").to_pylist(),
            strict=True,
        )
    }
    matched: dict[str, str] = {}
    for qid, q in zip(
        mc10_questions.column("question_id").to_pylist(), mc10_questions.column("question").to_pylist(), strict=True
    ):
        category = locomo.get((qid, normalize_question(q)))
        if category is not None:
            matched[qid] = category
    return matched


def mc10_vs_locomo(mc10_questions: pa.Table, locomo_questions: pa.Table) -> pa.Table:
    """Contingency (MC10 label x LoCoMo category, with counts) over the matched questions."""
    matched = match_locomo(mc10_questions, locomo_questions)
    ids = mc10_questions.column("question_id").to_pylist()
    labels = dict(zip(ids, mc10_questions.column("type_raw").to_pylist(), strict=True))
    counts = Counter((labels[qid], cat) for qid, cat in matched.items())
    rows = [
        {
            "mc10_label": label,
            "locomo_category": cat,
            "locomo_type_name": locomo_type_name(cat),
            "mapping": LOCOMO_CATEGORY_MAPPING,
            "n": n,
        }
        for (label, cat), n in sorted(counts.items())
    ]
    return pa.Table.from_pylist(rows, schema=CROSSCHECK_SCHEMA)


def mc10_type_names(mc10_questions: pa.Table, locomo_questions: pa.Table | None) -> pa.Table:
    """``mc10_questions`` with ``type_name``/``is_abstention`` set from the cross-check.

    Matched question -> official LoCoMo name of its matched category, abstention iff category 5.
    Unmatched (or no LoCoMo table) -> ``"mc10:<label>"``, abstention iff label ``adversarial``.
    """
    matched = match_locomo(mc10_questions, locomo_questions) if locomo_questions is not None else {}
    names, abstentions = [], []
    for qid, label in zip(
        mc10_questions.column("question_id").to_pylist(), mc10_questions.column("type_raw").to_pylist(), strict=True
    ):
        cat = matched.get(qid)
        names.append(mc10_unverified_name(label) if cat is None else locomo_type_name(cat))
        abstentions.append(label == MC10_ADVERSARIAL_LABEL if cat is None else int(cat) == ADVERSARIAL_CATEGORY)
    out = mc10_questions
    for name, values in (("type_name", names), ("is_abstention", abstentions)):
        i = out.schema.get_field_index(name)
        out = out.set_column(i, out.schema.field(i), pa.array(values, type=out.schema.field(i).type))
    return out


@dataclass(frozen=True)
class CrosscheckResult:
    """What ``apply_mc10_crosscheck`` did for one MC10 dataset."""

    mc10_dataset: str
    locomo_datasets: tuple[str, ...]
    n_mc10: int
    n_matched: int
    contingency: pa.Table

    @property
    def label_to_category(self) -> Mapping[str, str]:
        """Labels whose matched questions all fall in ONE LoCoMo category (a verified relation)."""
        cats: dict[str, set[str]] = {}
        for r in self.contingency.to_pylist():
            cats.setdefault(r["mc10_label"], set()).add(r["locomo_category"])
        return {label: next(iter(c)) for label, c in cats.items() if len(c) == 1}


def _locomo_questions(store: ResultStore, names: Sequence[str]) -> pa.Table | None:
    tables = [t for t in (store.read_canonical(n, "questions") for n in names) if t is not None]
    return pa.concat_tables(tables) if tables else None


def _write_if_changed(path: Path, table: pa.Table) -> bool:
    """Write ``table`` unless ``path`` already holds the same rows.

    Why: the cross-check runs on every conversion; rewriting identical files would change their
    mtime and make every later stage that fingerprints its inputs by (size, mtime) -- the
    retrieval metric tables, the report -- recompute on a rerun that changed nothing.
    """
    if path.exists() and pq.read_table(path).equals(table):
        return False
    write_parquet_atomic(path, table)
    return True


def apply_mc10_crosscheck(
    store: ResultStore, datasets: Sequence[DatasetConfig], log: Callable[[str], None]
) -> list[CrosscheckResult]:
    """Rewrite every configured MC10 dataset's type names from the configured LoCoMo datasets."""
    locomo_names = tuple(d.name for d in datasets if dataset_family(d.loader) == FAMILY_LOCOMO)
    locomo = _locomo_questions(store, locomo_names)
    results = []
    for ds in (d for d in datasets if dataset_family(d.loader) == FAMILY_MC10):
        questions = store.read_canonical(ds.name, "questions")
        if questions is None:
            raise FileNotFoundError(f"canonical questions of {ds.name!r} missing; convert it first")
        contingency = mc10_vs_locomo(questions, locomo) if locomo is not None else CROSSCHECK_SCHEMA.empty_table()
        _write_if_changed(store.canonical_path(ds.name, "questions"), mc10_type_names(questions, locomo))
        _write_if_changed(store.canonical_path(ds.name, CROSSCHECK_TABLE), contingency)
        result = CrosscheckResult(
            ds.name, locomo_names, questions.num_rows, sum(contingency.column("n").to_pylist()), contingency
        )
        log(
            f"{ds.name}: {result.n_matched}/{result.n_mc10} MC10 questions matched LoCoMo "
            f"({', '.join(locomo_names) or 'no LoCoMo dataset configured'}); "
            f"label -> category: {dict(result.label_to_category) or 'unverified'}"
        )
        results.append(result)
    return results
