"""The report's judge section: each judge's agreement with the others (Cohen's kappa) beside its error
rates on answers of known verdict (``membench judge-probe``).

Why side by side: two judges can agree perfectly (kappa 1) and both accept vague answers; kappa
says whether judges agree, the probe rates say whether they are right.
"""

from __future__ import annotations

import html
from typing import Any

from pipeline.catalog.probes import ALL_TYPES

Row = dict[str, Any]


def _f(v: Any) -> str:
    return "–" if v is None else f"{v:.3f}" if isinstance(v, float) else html.escape(str(v))


def judge_section(data: Any, dataset: str) -> list[str]:
    """``<h2>Judges</h2>`` and one row per judge (empty when no judge was compared or probed)."""
    agreement = [r for r in data.rows("judge_agreement") if r["dataset"] == dataset and r.get("system") == "(all)"]
    probes = {r["judge"]: r for r in data.rows("judge_probe_rates") if r["dataset"] == dataset
              and r["type_raw"] == ALL_TYPES}  # fmt: skip
    judges = sorted({r["judge_a"] for r in agreement} | {r["judge_b"] for r in agreement} | set(probes))
    if not judges:
        return []
    body = []
    for j in judges:
        kappas = "; ".join(
            f"{html.escape(r['judge_b'] if r['judge_a'] == j else r['judge_a'])} {_f(r.get('cohen_kappa'))} "
            f"(n={r['n_paired']}, {html.escape(str(r['reader']))})"
            for r in agreement
            if j in (r["judge_a"], r["judge_b"])
        )
        p = probes.get(j, {})
        probed = f"{p['n_probes']} ({p['n_failed']} failed)" if p else "not probed"
        body.append(
            f"<tr><td>{html.escape(j)}</td><td>{kappas or '–'}</td><td class=num>{_f(p.get('false_accept_rate'))}</td>"
            f"<td class=num>{_f(p.get('false_reject_rate'))}</td><td class=num>{probed}</td></tr>"
        )
    head = "<th>judge</th><th>Cohen's kappa with</th><th>false accept</th><th>false reject</th><th>probes</th>"
    note = (
        '<p class="note">False accept: share of known-wrong answers (another question\'s gold, a vague on-topic '
        'answer, the negated gold, "I don\'t know") the judge called correct; false reject: share of known-right '
        "answers (the gold, a paraphrase with its date in another format) it called wrong; probes whose judgment "
        "failed count in neither. Per question type: <code>SELECT * FROM judge_probe_rates</code>; run "
        "<code>membench judge-probe</code> to probe the configured judges.</p>"
    )
    table = f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    return ["<h2>Judges: agreement and error rates</h2>", table, note]
