"""Cohen's kappa (pure function, hand-checked) and the report views judge_agreement / judge_failures."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.catalog.report import JUDGE_AGREEMENT_SQL, JUDGE_FAILURES_SQL
from pipeline.core.status import UNPARSEABLE_ERROR_PREFIX
from pipeline.judges.base import UnparseableVerdict
from pipeline.metrics.agreement import cohen_kappa, cohen_kappa_counts


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        # textbook example: 20 both yes, 5 A only, 10 B only, 15 both no; p_o = .7, p_a = .5, p_b = .6,
        # p_e = .5 * .6 + .5 * .4 = .5 -> kappa = (.7 - .5) / .5 = .4
        ((20, 5, 10, 15), 0.4),
        ((10, 0, 0, 10), 1.0),  # perfect agreement
        ((0, 10, 10, 0), -1.0),  # perfect disagreement with balanced marginals
        # p_o = .5, p_a = p_b = .5 -> p_e = .5 -> 0 (chance level)
        ((5, 5, 5, 5), 0.0),
        # 9 both yes, 1 A only: p_o = .9, p_a = 1, p_b = .9, p_e = .9 -> kappa 0 despite 90 % agreement
        ((9, 1, 0, 0), 0.0),
        ((10, 0, 0, 0), None),  # both always 'correct': p_e = 1, undefined
        ((0, 0, 0, 0), None),
    ],
)
def test_cohen_kappa_counts(counts: tuple[int, int, int, int], expected: float | None) -> None:
    got = cohen_kappa_counts(*counts)
    assert got == (None if expected is None else pytest.approx(expected))


def test_cohen_kappa_of_sequences() -> None:
    a = [True, True, False, False, True, False]
    b = [True, False, False, False, True, True]
    # both 2, A only 1, B only 1, neither 2: p_o = 4/6, p_a = p_b = 1/2, p_e = 1/2 -> (2/3 - 1/2) / (1/2) = 1/3
    assert cohen_kappa(a, b) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="paired"):
        cohen_kappa([True], [True, False])


def _outcomes(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    con.execute(
        "CREATE TABLE judgment_outcomes (dataset VARCHAR, partition_key VARCHAR, system VARCHAR, reader VARCHAR, "
        "judge VARCHAR, metric VARCHAR, outcome VARCHAR, correct BOOLEAN, error VARCHAR)"
    )
    con.executemany("INSERT INTO judgment_outcomes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def test_judge_agreement_view_matches_the_function() -> None:
    a = [True, True, False, False, True, False]
    b = [True, False, False, False, True, True]
    rows = []
    for i, (va, vb) in enumerate(zip(a, b, strict=True)):
        system = "rag" if i < 3 else "full"
        rows.append(("loco", f"q{i}", system, "llm", "mem0", "mem0_locomo_judge", "scored", va, None))
        rows.append(("loco", f"q{i}", system, "llm", "strict", "mem0_locomo_judge_strict", "scored", vb, None))
    # not paired: a failed judgment of one judge and an excluded one
    rows.append(("loco", "q9", "rag", "llm", "mem0", "mem0_locomo_judge", "judgment_failed", None, "x"))
    rows.append(("loco", "q9", "rag", "llm", "strict", "mem0_locomo_judge_strict", "scored", True, None))
    con = duckdb.connect()
    _outcomes(con, rows)
    con.execute(JUDGE_AGREEMENT_SQL)
    got = {r[0]: r[1:] for r in con.execute(
        "SELECT system, judge_a, judge_b, n_paired, agreement, cohen_kappa FROM judge_agreement"
    ).fetchall()}  # fmt: skip
    assert got["(all)"][:3] == ("mem0", "strict", 6)
    assert got["(all)"][3] == pytest.approx(4 / 6)
    assert got["(all)"][4] == pytest.approx(cohen_kappa(a, b))
    assert got["rag"][4] == pytest.approx(cohen_kappa(a[:3], b[:3]))  # = 0.4: p_o 2/3, p_a 2/3, p_b 1/3
    assert got["full"][4] == pytest.approx(cohen_kappa(a[3:], b[3:]))


def test_judge_failures_counts_unparseable_verdicts() -> None:
    verdict = UnparseableVerdict("judge reply is not a clear yes/no: 'Maybe'")
    assert f"{type(verdict).__name__}: {verdict}".startswith(UNPARSEABLE_ERROR_PREFIX)  # as the driver stores it
    rows = [
        ("lme", "q1", "rag", "llm", "official", "lme_official_llm_judge", "judgment_failed", None,
         "UnparseableVerdict: judge reply is not a clear yes/no: 'Maybe'"),
        ("lme", "q2", "rag", "llm", "official", "lme_official_llm_judge", "judgment_failed", None,
         "JudgeFailed: judge LLM call failed (m): HTTP 503"),
        ("lme", "q3", "rag", "llm", "official", "lme_official_llm_judge", "scored", True, None),
        ("lme", "q4", "rag", "llm", "official", "lme_official_llm_judge", "answer_failed", None, "answer failed: x"),
    ]  # fmt: skip
    con = duckdb.connect()
    _outcomes(con, rows)
    con.execute(JUDGE_FAILURES_SQL)
    [row] = con.execute("SELECT n_judgments, n_failed_judgment, n_unparseable_verdict FROM judge_failures").fetchall()
    assert row == (4, 2, 1)
