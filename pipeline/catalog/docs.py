"""What every view and column of the result catalog means: one source for DuckDB comments, the
README table and ``membench schema``.

Why one source: a column documented in three places drifts; here the text is written once,
``comment_catalog`` stores it in ``results.duckdb`` (``COMMENT ON``, so ``SELECT comment FROM
duckdb_columns()`` and DuckDB's ``.schema`` show it), ``markdown`` renders the README table, and
a test fails when a view or column of a real catalog has no text or the README is stale.

Lookup order for a column: the view's own entry, then the shared entry (a name that means the
same in every view), then a pattern (metric columns such as ``recall_any_at_<k>``, whose k set
is configurable).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import duckdb

import pipeline.catalog.agentic_docs as agentic
import pipeline.catalog.manifest as manifest
import pipeline.catalog.products as product
from pipeline.core.records import CANONICAL_TABLES

VIEW_DOCS: dict[str, str] = {
    **{t.name: t.doc for t in CANONICAL_TABLES},  # declared in pipeline.core.records
    "dataset_failures": "dataset files that could not be loaded at all",
    "mc10_crosscheck": "LoCoMo-MC10 question types cross-checked against LoCoMo categories",
    "embeddings": "cached embedding vectors, one per (model variant, text hash)",
    "ingestion": "per (question, memory system): memory ingestion status",
    "retrievals": "per (question, memory system): the ranked units and the reader's context",
    "retrieval_metrics": "per (question, memory system, level): every retrieval metric, or why it is not scored",
    "answers": "per (question, system, reader): the reader's answer or its failure",
    "judgments": "per (question, system, reader, judge): the verdict or its failure",
    "llm_calls": "one row per LLM request (tokens, latency, cache hit, cost)",
    "progress": "per (question, stage): done / failed / missing, with errors",
    "progress_summary": "per (dataset, stage): counts of done / failed / missing questions",
    "retrieval_report": "retrieval metrics averaged per dataset x system x level x question type (+ '(all)')",
    "judgment_outcomes": "one row per judgment with its outcome (scored / excluded / answer_failed / judgment_failed)",
    "accuracy_report": "headline per dataset x system x reader x judge metric, with 95 % interval and failures apart",
    "accuracy_by_type": "accuracy_report per question type",
    "mc_confusion": "multiple-choice answers: gold option x predicted option (invalid / failed included)",
    "paired_comparisons": "pairs of systems on the questions both scored: McNemar exact, paired bootstrap for means",
    "judge_agreement": "pairs of judges on the same answers: 2x2 counts, agreement, Cohen's kappa",
    "judge_failures": "failed judgments per judge, and how many were unparseable verdicts",
    "catalog_errors": "report views that could not be created (their error)",
    "wrong_answer_causes": "wrong verdicts per dataset x system x reader x judge metric x question type (+ '(all)'), "
    "split by where they were lost: evidence not retrieved, retrieved but answered wrong, right by a string metric",
    "isolation_checks": "membench check-isolation: per memory system, whether another haystack's canary fact came "
    "back in its retrieval",
    "judge_probes": "membench judge-probe: per (dataset, judge, probe): an answer of known verdict and the judge's "
    "verdict",
    "judge_probe_rates": "per dataset x judge x question type (+ '(all)'): false-accept and false-reject rates on the "
    "probes",
    "judge_probe_kinds": "per dataset x judge x probe kind: how often the judge accepted that kind of answer",
    "lme_official_accuracy": "LongMemEval's official aggregates (print_qa_metrics.py): per type, task-averaged, "
    "overall, abstention",
    "locomo_official_categories": "LoCoMo's per-category table in the official order 4, 1, 2, 3, 5, overall with "
    "and without category 5",
    "locomo_official_recall": "LoCoMo's official evidence recall per category (evaluation_stats.py)",
    "locomo_official_by_distance": "LoCoMo accuracy by distance of the oldest evidence, 1K-token bins",
    "beam_official_abilities": "BEAM's per-ability table (report_results.py): mean over chats of each chat's mean, "
    "then the average of the ten abilities",
    "repeat_report": "readers with repeats: accuracy per repeat, mean and sample sd across repeats, majority vote",
    "judge_repeat_report": "judges with repeats (judge noise on the same answers): as repeat_report",
    **agentic.VIEW_DOCS,
    **manifest.VIEW_DOCS,
    **product.VIEW_DOCS,
}

SHARED: dict[str, str] = {
    "dataset": "dataset name from the config (prefix of the partition key)",
    "partition_key": "question key <dataset>__<question id> (sanitized), the Dagster partition",
    "question_id": "the question's id in the raw dataset",
    "record_index": "position of the record in the raw file",
    "record_id": "id of the raw record (if it could be read)",
    "type_raw": "question type as the dataset gives it (LoCoMo category number, LongMemEval type)",
    "type_name": "question type, named (LoCoMo categories by the official mapping)",
    "unit": "work unit within the question: system, system/reader or system/reader/judge",
    "unit_hash": "hash of the unit's resolved configuration (a change re-runs the unit)",
    "record_hash": "hash of the question's canonical record and haystack the unit used (an edit re-runs it)",
    "status": "ok or failed",
    "error": "error message of a failed row (NULL when ok)",
    "duration_s": "seconds the unit took",
    "finished_at": "when the unit finished (UTC)",
    "system": "memory system name from the config",
    "system_kind": "registered memory system kind (rag, hybrid, full_context, ...)",
    "reader": "reader name from the config",
    "reader_label": "reader label ('offline' marks a reader without a language model)",
    "judge": "judge name from the config",
    "metric": "judge metric name (pinned definition, see the report's definitions)",
    "haystack_id": "id of the question's haystack (the sessions its memory holds)",
    "session_key": "session id, unique within the dataset",
    "source_session_id": "the session's id in the raw file",
    "context_tokens": "tokens (pinned regex_word_punct count) of the context given to the reader",
    "level": "retrieval level: turn, session (LongMemEval's official) or session_dedup (variant)",
    "n": "number of rows in the group",
    "n_paired": "questions both sides scored",
    "n_both_correct": "paired questions both got right",
    "n_only_a_correct": "paired questions only A got right (McNemar b)",
    "n_only_b_correct": "paired questions only B got right (McNemar c)",
    "n_both_wrong": "paired questions both got wrong",
    "accuracy_a": "accuracy of A on the paired questions",
    "accuracy_b": "accuracy of B on the paired questions",
    "accuracy": "n_correct / n_scored (failed and excluded questions are not in the denominator)",
    "wilson_low": "Wilson 95 % lower bound of accuracy (binary metrics only; NULL for mean scores)",
    "wilson_high": "Wilson 95 % upper bound of accuracy (binary metrics only; NULL for mean scores)",
    "aggregate": "how the metric aggregates: accuracy (binary) or mean_score (e.g. token F1)",
    "headline_value": "accuracy, or mean_score for mean-score metrics",
    "ci_low": "95 % lower bound of headline_value (method in ci_method)",
    "ci_high": "95 % upper bound of headline_value (method in ci_method)",
    "ci_method": "wilson_95 (binary) or bootstrap_percentile_95 (means; seed 13, 1000 resamples)",
    "mean_score": "mean judge score over scored questions",
    "n_scored": "questions scored (verdict present, nothing failed)",
    "n_correct": "scored questions judged correct",
    "n_failed_answer": "questions whose answer failed (not scored, retried next run)",
    "n_failed_judgment": "questions whose judgment failed (not scored, retried next run)",
    "n_invalid": "scored multiple-choice replies that name no option (scored wrong)",
    "n_excluded": "judgments where the metric does not apply (verdict NULL)",
    "n_judgments": "judgment rows",
    "failures_as_wrong": "lower bound of headline_value: every question without a score (failed answer, failed "
    "judgment or unparseable verdict, no verdict row) counted as wrong (score 0); excluded questions stay out",
    "n_failures_as_wrong": "questions failures_as_wrong counts as wrong without a score: n_failed_answer + "
    "n_failed_judgment + questions of the group without a judgment row",
    "tokens_per_correct": "reader prompt + completion tokens of every ok answer / n_correct (NULL when a reader "
    "reports no tokens or nothing is correct)",
    "usd_per_correct": "reader cost of every ok answer / n_correct (NULL when an answer has no price or nothing "
    "is correct)",
    "seconds_per_correct": "(reader seconds of every ok answer, a cache hit counted at the uncached mean, + "
    "retrieval seconds of every ok retrieval of the system) / n_correct",
    "mean_context_tokens": "mean context tokens given to the reader",
    "n_questions": "questions in the group",
    "n_failed": "questions whose retrieval failed",
    "n_excluded_abstention": "LongMemEval abstention questions (not scored for retrieval)",
    "n_excluded_no_gold": "questions without gold units at this level (not scored)",
    "retrieval_latency_s": "seconds the memory took to retrieve",
    "retrieval_latency_p50_s": "median retrieval latency (linear percentile)",
    "retrieval_latency_p95_s": "95th percentile retrieval latency (linear percentile)",
    "latency_s": "seconds the reader took (LLM call incl. retries)",
    "prompt_tokens": "LLM-reported prompt tokens",
    "completion_tokens": "LLM-reported completion tokens",
    "cache_hit": "true when the reply came from the LLM cache",
    "cost_usd": "cost from configs/prices.yaml (NULL when the model has no price)",
    "model": "LLM model name (NULL for offline readers)",
    "units": "the retrieved units, ranked (id, rank, session, turn ids, text, channel scores)",
    "outcome": "scored, or why not (excluded / failed)",
    "correct": "the verdict (NULL when the metric does not apply)",
    "score": "the judge's score (1/0 for binary metrics, e.g. token F1 for locomo_f1)",
    "invalid": "a multiple-choice reply that names no option",
    "judge_prompt_tokens": "judge LLM prompt tokens (0 for rule-based judges)",
    "judge_completion_tokens": "judge LLM completion tokens",
    "judge_cache_hit": "true when the judge's reply came from the LLM cache",
    "details": "judge details as JSON (e.g. the LLM judge's raw reply)",
    "system_a": "first system of the pair (alphabetical)",
    "system_b": "second system of the pair",
    "message": "the load error",
    "field": "record field concerned",
    "file": "raw file",
    "text": "the turn's text",
    "position": "0-based position",
}

_OFFICIAL_COLUMNS: dict[str, str] = {  # columns of the official aggregate views (pipeline/catalog/official.py)
        "row_order": "row position in the official table", "n_failed": "failed answers or judgments (apart)",
        "aggregate": "type / category row, or task_averaged, overall, overall_without_5, abstention",
        "accuracy": "n_correct / n_scored; task_averaged: mean of the six type accuracies (NULL if one is missing)",
        "category": "LoCoMo category (NULL on overall rows)", "sum_score": "sum of the judge's score",
        "mean_score": "sum_score / n_scored", "n_questions": "questions with a successful retrieval",
        "n_with_evidence": "of those, questions with evidence (only they add to sum_recall)",
        "sum_recall": "sum of evidence_recall_official_context over questions with evidence",
        "recall": "sum_recall / n_questions (the official denominator: every question of the category)",
}  # fmt: skip

VIEW_COLUMNS: dict[str, dict[str, str]] = {
    **{t.name: t.column_docs() for t in CANONICAL_TABLES},  # declared in pipeline.core.records
    "mc10_crosscheck": {
        "mc10_label": "MC10 question type", "locomo_category": "LoCoMo category number",
        "locomo_type_name": "LoCoMo category name", "mapping": "agrees / differs", "n": "questions",
    },
    "embeddings": {"text_hash": "hash of the embedded text", "dim": "vector length", "vector": "the embedding",
                   "model": "embedding model variant"},
    "ingestion": {
        "sessions_completed": "sessions ingested so far", "sessions_total": "sessions in the haystack",
        "next_session": "next session to ingest (resume point)", "units": "memory units written",
        "ingest_seconds": "seconds spent ingesting",
    },
    "retrievals": {
        "context": "the context text given to the reader", "trimmed_units": "ranked units dropped by the token "
        "budget", "notes": "system notes as JSON (e.g. units_total)",
    },
    "retrieval_metrics": {
        "gold_protocol": "how gold units are derived: longmemeval or evidence", "n_gold": "gold units at the level",
        "n_ranked": "ranked units at the level", "n_context_units": "units in the reader's context",
    },
    "answers": {
        "reader_kind": "registered reader kind", "label": "reader label ('offline' = no language model)",
        "prediction": "the answer text", "predicted_index": "chosen option (multiple choice)",
        **agentic.ANSWER_COLUMNS,
    },
    "progress": {
        "stage": "pipeline stage", "status": "done, failed or missing", "units_ok": "units done",
        "units_failed": "units failed", "errors": "errors of the failed units", "duration_s": "seconds of the stage",
    },
    "progress_summary": {
        "stage": "pipeline stage", "done": "questions done", "failed": "questions with a failed unit",
        "missing": "questions not run yet", "total_duration_s": "seconds in total",
        "p50_duration_s": "median seconds per question",
    },
    "accuracy_report": {
        "n_dataset_questions": "questions of the dataset (load failures included)",
        "n_missing": "questions without a judgment row yet",
        "latency_p50_s": "median reader latency over ok, non-cached answers",
        "latency_p95_s": "95th percentile reader latency over ok, non-cached answers",
        "cache_hit_rate": "share of ok answers served from the LLM cache",
        "mean_prompt_tokens": "mean prompt tokens per ok answer",
        "mean_completion_tokens": "mean completion tokens per ok answer",
        "cost_per_question_usd": "mean cost per priced ok answer",
        "total_cost_usd": "total cost of priced ok answers", "n_cost_unknown": "ok answers without a price",
    },
    "accuracy_by_type": {"n_type_questions": "questions of this type in the dataset"},
    "mc_confusion": {"gold_index": "correct option", "predicted": "chosen option, 'invalid' or 'failed'"},
    "paired_comparisons": {
        "accuracy_diff": "accuracy_a - accuracy_b", "mcnemar_p": "exact two-sided McNemar p-value",
        "mean_score_a": "mean score of A on the paired questions", "mean_score_b": "mean score of B",
        "score_diff": "mean_score_a - mean_score_b",
        "score_diff_ci_low": "paired bootstrap 95 % lower bound of score_diff (mean-score metrics)",
        "score_diff_ci_high": "paired bootstrap 95 % upper bound of score_diff (mean-score metrics)",
    },
    "judge_agreement": {
        "judge_a": "first judge (alphabetical)", "judge_b": "second judge", "metric_a": "metric of judge_a",
        "metric_b": "metric of judge_b", "agreement": "share of paired answers with the same verdict",
        "cohen_kappa": "Cohen's kappa of the two verdicts", "system": "memory system, or (all)",
        "n_only_a_correct": "answers only judge_a accepted", "n_only_b_correct": "answers only judge_b accepted",
        "accuracy_a": "judge_a's accuracy on the paired answers", "accuracy_b": "judge_b's accuracy",
    },
    "judge_failures": {"n_unparseable_verdict": "failed judgments whose LLM reply held no verdict"},
    "catalog_errors": {"view_creator": "the function that failed", "error": "its error"},
    "wrong_answer_causes": {
        "n_wrong": "scored verdicts with correct = false",
        "n_evidence_not_retrieved": "wrong answers whose reader context held no gold evidence turn "
        "(turn-level evidence_recall_context = 0)",
        "n_retrieved_answered_wrong": "wrong answers whose reader context held gold evidence (evidence_recall_context "
        "> 0)",
        "n_string_right_judged_wrong": "wrong by this judge, right by a string metric on the same answer "
        "(locomo_exact_match or lme_contains_normalized); tried first",
        "n_evidence_unknown": "wrong answers with no scored evidence to look for (no gold evidence, abstention, "
        "multiple choice, failed retrieval)",
    },
    "isolation_checks": {
        "status": "isolated, leaked, inconclusive (haystack A's own retrieval lacked the canary) or failed",
        "leaked": "haystack B's retrieval (units or context) held haystack A's canary",
        "control_found": "haystack A's own retrieval held its canary (without it no leak can be ruled out)",
        "canary": "the made-up code ingested into haystack A", "n_units_b": "units haystack B's retrieval returned",
        "checked_at": "when the check ran (UTC)",
    },
    "judge_probes": {
        "judge_model": "the model an LLM judge asked (NULL for rule-based judges)",
        "unit_hash": "hash of the judge's definition, params, model and the probe (a change asks again)",
        "probe": "probe kind: other_gold, vague_on_topic, negation, i_dont_know (known wrong); gold, paraphrase "
        "(known right)",
        "expected_correct": "the verdict a perfect judge gives", "answer": "the probe's answer text",
        "reformatted_date": "paraphrase whose gold date was written in another format",
        "verdict": "the judge's verdict (NULL: failed, or the metric does not apply)",
    },
    **{view: {
        "n_probes": "probes", "n_questions": "questions the probes were built from",
        "n_failed": "probes whose judgment failed (no verdict; counted apart)",
        "n_excluded": "probes the metric does not apply to (verdict NULL)",
        "n_wrong_judged": "known-wrong probes with a verdict", "n_false_accept": "known-wrong probes judged correct",
        "n_right_judged": "known-right probes with a verdict", "n_false_reject": "known-right probes judged wrong",
        "false_accept_rate": "n_false_accept / n_wrong_judged (NULL when none was judged)",
        "false_reject_rate": "n_false_reject / n_right_judged (NULL when none was judged)",
        "judge_model": "the model an LLM judge asked (NULL for rule-based judges)",
        "probe": "probe kind", "expected_correct": "whether this kind of probe is a right answer",
        "n_judged": "probes with a verdict", "n_accepted": "probes judged correct",
        "accept_rate": "n_accepted / n_judged",
    } for view in ("judge_probe_rates", "judge_probe_kinds")},
    **{view: _OFFICIAL_COLUMNS for view in ("lme_official_accuracy", "locomo_official_categories",
                                            "locomo_official_recall")},
    **{view: {
        "n_repeats": "repeats of the reader (units <system>/<reader>~<r>), or of the judge (<judge>~<r>)",
        "repeat_accuracies": "accuracy of each repeat, in repeat order",
        "repeat_n_scored": "scored questions per repeat",
        "n_failed": "failed answers or judgments over all repeats (never a vote)",
        "mean_accuracy": "mean of the repeat accuracies", "sd_accuracy": "their sample standard deviation (n - 1)",
        "majority_accuracy": "share of questions where more than half of the repeats that scored it are correct",
        "n_questions_voted": "questions scored by at least one repeat",
    } for view in ("repeat_report", "judge_repeat_report")},
    "beam_official_abilities": {
        "tier": "BEAM tier of the dataset (100K, 500K, 1M, 10M), read from the chat ids",
        "row_order": "row position: the ten abilities in report_results.py's order, then ability_average",
        "aggregate": "ability, or ability_average (mean of the ten ability scores; NULL unless all ten are present)",
        "ability": "BEAM ability (question type; NULL on the ability_average row)",
        "n_chats": "chats with a scored question of the ability", "n_failed": "failed answers or judgments (apart)",
        "score": "mean over chats of the chat's mean score (the official aggregation)",
    },
    "locomo_official_by_distance": {
        "category": "LoCoMo category", "category_order": "position in the official order 4, 1, 2, 3, 5",
        "distance_bin": "ceil(whitespace tokens up to the oldest evidence turn / 1000)",
        "sum_score": "sum of the judge's score", "mean_score": "mean score in the bin",
    },
    **agentic.VIEW_COLUMNS,
    **manifest.VIEW_COLUMNS,
    **product.VIEW_COLUMNS,
}  # fmt: skip
VIEW_COLUMNS["agentic_retrieval_metrics"] = {**VIEW_COLUMNS["retrieval_metrics"],
                                             **agentic.VIEW_COLUMNS["agentic_retrieval_metrics"]}  # fmt: skip

_METRIC_NAMES = {
    "recall_any": "1 if any gold unit is in the top k",
    "recall_all": "1 if all gold units are in the top k",
    "ndcg_any": "LongMemEval nDCG of the top k",
    "evidence_recall": "share of gold units in the top k",
}
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"^retr_(turn|session|session_keyed|session_dedup)_(.+)$"),
        "retrieval metric (the retrieval_report column named after the level) at {1} level, mean over scored questions",
    ),
    (re.compile(r"^(recall_any|recall_all|ndcg_any|evidence_recall)_at_(\d+|<k>)$"), "{1}@{2}: {m}"),
    (re.compile(r"^evidence_recall_context$"), "share of gold units in the reader's context"),
    (
        re.compile(r"^evidence_recall_official_context$"),
        "LoCoMo's official evidence recall (locomo_evidence_recall_official): share of the raw evidence strings "
        "among the context's dialogue ids, no evidence = 1; turn level, over every successful retrieval",
    ),
    (re.compile(r"^evidence_recall(_[a-z_]+)?$"), "LoCoMo evidence recall variant{1}"),
]


def column_doc(view: str, column: str) -> str | None:
    """The text of ``view.column`` (None when undocumented)."""
    own = VIEW_COLUMNS.get(view, {})
    if column in own:
        return own[column]
    if column in SHARED:
        return SHARED[column]
    for pattern, template in PATTERNS:
        m = pattern.match(column)
        if m:
            groups = {str(i + 1): g or "" for i, g in enumerate(m.groups())}
            return template.replace("{m}", _METRIC_NAMES.get(groups.get("1", ""), "")).format("", *groups.values())
    return None


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def catalog_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """View -> its columns in order, for every non-internal view of ``con``."""
    rows = con.execute(
        "SELECT table_name, list(column_name ORDER BY column_index) FROM duckdb_columns() "
        "WHERE NOT internal AND table_name IN (SELECT view_name FROM duckdb_views() WHERE NOT internal) "
        "GROUP BY table_name ORDER BY table_name"
    ).fetchall()
    return {name: list(cols) for name, cols in rows}


def comment_catalog(con: duckdb.DuckDBPyConnection) -> list[str]:
    """``COMMENT ON`` every documented view and column of ``con``; returns undocumented names.

    Why not fail on a gap: a view added by a newer stage must not sink a run; the gap is caught
    by the schema test instead.
    """
    statements, missing = comment_statements(catalog_columns(con))
    run_in_one_transaction(con, statements)
    return missing


def comment_statements(columns: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """(the ``COMMENT ON`` statements of every documented view and column, the undocumented names)."""
    statements: list[str] = []
    missing: list[str] = []
    for view, names in columns.items():
        doc = VIEW_DOCS.get(view)
        if doc is None:
            missing.append(view)
        else:
            statements.append(f'COMMENT ON VIEW "{view}" IS {_lit(doc)}')
        for column in names:
            text = column_doc(view, column)
            if text is None:
                missing.append(f"{view}.{column}")
            else:
                statements.append(f'COMMENT ON COLUMN "{view}"."{column}" IS {_lit(text)}')
    return statements, missing


def run_in_one_transaction(con: duckdb.DuckDBPyConnection, statements: list[str]) -> None:
    """Run ``statements`` in order as one transaction, with the effect of running them one by one.

    Why: each statement on its own is a commit, and a commit of the catalog file writes and syncs
    its write-ahead log: the catalog's ~540 comments took ~2 s wall (~0.3 s CPU) at a run's end,
    ~0.15 s in one. Where a statement fails, the batch is rolled back and the statements run one
    by one: those before the failing one stay, and its error is raised, as before. ``con`` must be
    in auto-commit (no transaction open), as every connection of the catalog's is.
    """
    if not statements:
        return
    con.execute("BEGIN TRANSACTION")
    try:
        for statement in statements:
            con.execute(statement)
    except duckdb.Error:
        con.execute("ROLLBACK")
        _run_each(con, statements)
        return
    con.execute("COMMIT")


def _run_each(con: duckdb.DuckDBPyConnection, statements: list[str]) -> None:
    for statement in statements:
        con.execute(statement)


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _generic(column: str) -> str:
    """``recall_any_at_10`` -> ``recall_any_at_<k>``: one README entry per configurable metric."""
    return re.sub(r"_at_\d+$", "_at_<k>", column)


def markdown(columns: dict[str, list[str]], views: Iterable[str] | None = None) -> str:
    """The README schema table: one row per view (what it holds, then each column and its meaning)."""
    lines = ["| view | what | columns |", "|---|---|---|"]
    for view in views or sorted(columns):
        entries: dict[str, str] = {}
        for c in columns.get(view, []):
            entries.setdefault(_generic(c), column_doc(view, _generic(c)) or column_doc(view, c) or "?")
        cols = "; ".join(f"`{c}`: {_md(doc)}" for c, doc in entries.items())
        lines.append(f"| `{view}` | {_md(VIEW_DOCS.get(view, '?'))} | {cols} |")
    return "\n".join(lines)
