"""One-line definitions of every number the reports show (named in results.json and report.html).

Why a single table: a reader of the HTML report must be able to tell exactly what "accuracy" or
"recall_any@10" means without opening the code; tests check every report column is defined here.
"""

from __future__ import annotations

from pipeline.metrics.agreement import COHEN_KAPPA
from pipeline.metrics.agreement import DEFINITION as KAPPA_DEFINITION
from pipeline.metrics.bounds import FAILURES_AS_WRONG
from pipeline.metrics.locomo_evidence import DEFINITIONS as LOCOMO_EVIDENCE_DEFINITIONS
from pipeline.metrics.retrieval import METRIC_DEFINITIONS as RETRIEVAL_DEFINITIONS
from pipeline.metrics.stats import (
    BOOTSTRAP_95,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    P95,
    PERCENTILE_METHOD,
    Z_95,
)

OFFLINE_LABEL = "offline (no LLM)"

REPORT_DEFINITIONS: dict[str, str] = {
    "accuracy": (
        "n_correct / n_scored. Scored = judgment ok with a verdict; failed answers, failed judgments and "
        "excluded questions are NOT in the denominator (never counted as wrong); invalid MC replies are "
        "scored wrong and also counted in n_invalid."
    ),
    "wilson_95": f"Wilson score interval for accuracy, z = {Z_95:.6f} (two-sided 95 %); binary metrics only.",
    BOOTSTRAP_95: (
        f"95 % interval of a mean score (e.g. locomo_f1): the 2.5 % and 97.5 % linear percentiles of the means of "
        f"{BOOTSTRAP_RESAMPLES} resamples drawn with replacement, seed {BOOTSTRAP_SEED} (a counter-based generator "
        "shared by Python and the DuckDB macro bootstrap_mean_ci, so results.json and SQL agree)."
    ),
    "paired bootstrap": (
        "for two systems (or two runs) on the same questions: the bootstrap above over the per-question score "
        "differences; p = min(1, 2 * min(share of resampled mean differences <= 0, share >= 0))."
    ),
    "mean_score": "mean of the judge's score over scored questions (e.g. token F1 for locomo_f1).",
    "integrity flags": (  # pipeline/provenance/manifest.py; docs/guide/manifest.md
        "beside the numbers they qualify: 'sliced' (the config's limit / limit_per_type / question_ids: the "
        "numbers cover N of the file's questions), 'failed questions' (not scored, retried next run), "
        "'top_k ≥ haystack' (the system ranked every session and indexed turn of the haystack: its retrieval "
        "equals full context); all in manifest.json and the integrity_flags view, checked by membench verify."
    ),
    "headline_value": "accuracy, or mean_score for judge metrics whose aggregate is mean_score (locomo_f1).",
    "n_failed_answer": "questions whose answer failed (reader error); reported apart, retried next run.",
    "n_failed_judgment": "questions whose answer is fine but whose judgment failed; reported apart.",
    "n_invalid": "scored multiple-choice replies that could not be parsed to an option (scored wrong).",
    "n_excluded": "judgments where the judge metric does not apply to the question (verdict null).",
    "n_missing": "questions of the dataset without a judgment row for this system/reader/judge yet.",
    FAILURES_AS_WRONG: (
        "lower bound of headline_value: every unscored question (failed answer, failed judgment or unparseable "
        "verdict, no judgment row) counted wrong: credit / (n_scored + n_failures_as_wrong); shown as "
        "'≥ value (n as wrong)' beside a headline when n > 0. compare and leaderboard say when it reverses an order."
    ),
    "tokens / usd / seconds_per_correct": (
        "what every ok answer of the system/reader cost (reader tokens; reader dollars, unknown when a model has no "
        "price; reader seconds with cache hits at the uncached mean, plus retrieval seconds) / n_correct."
    ),
    "<system>@<c>": (
        "memory system <system> read at depth c: the first c ranked units of its one retrieval per question "
        "(config cutoffs:), answered and judged as a system; the accuracy-vs-context plot joins a system's depths."
    ),
    "wrong_answer_causes": (
        "each wrong verdict's one cause, in this order: right by a string metric (exact match, gold contained) but "
        "judged wrong; no gold evidence turn in the reader's context; evidence in context, answered wrong; no "
        "scored evidence to look for."
    ),
    "false accept / false reject": (
        "membench judge-probe: known-wrong answers (another question's gold, vague on-topic, negated gold, "
        "I don't know) judged correct / known-wrong answers judged; known-right answers (gold, paraphrase with its "
        "date reformatted) judged wrong / known-right answers judged; failed judgments in neither."
    ),
    "isolation_leak": (
        "membench check-isolation: a canary fact ingested into one haystack came back in another haystack's "
        "retrieval of this system (integrity flag beside its numbers)."
    ),
    "latency_p50_s / latency_p95_s": (
        f"reader latency percentiles (method '{PERCENTILE_METHOD}', = DuckDB quantile_cont) over ok answers "
        "that were not LLM-cache hits."
    ),
    "retrieval_latency_p50_s / p95_s": (
        f"memory retrieval latency percentiles (method '{PERCENTILE_METHOD}') over retrievals with a latency; "
        f"p95 = quantile {P95}."
    ),
    "mean_prompt_tokens / mean_completion_tokens": "mean LLM-reported tokens per ok answer (0 for offline readers).",
    "mean_context_tokens": "mean tokens (pinned regex_word_punct count) of the memory context given to the reader.",
    "cost_per_question_usd": (
        "mean cost_usd over ok answers with a known price (configs/prices.yaml); n_cost_unknown counts unpriced."
    ),
    "mcnemar_p": (
        "exact two-sided McNemar p-value on the questions both systems scored: "
        "min(1, 2 * P(X <= min(b, c))), X ~ Binomial(b + c, 1/2), b/c = discordant pairs; 1 when b + c = 0."
    ),
    "retr_<level>_<metric>": "a retrieval metric (below) averaged over the system's scored questions at that level.",
    **RETRIEVAL_DEFINITIONS,
    **LOCOMO_EVIDENCE_DEFINITIONS,
    COHEN_KAPPA: KAPPA_DEFINITION,
    "n_unparseable_verdict": (
        "failed judgments whose LLM reply held no verdict (e.g. 'Maybe'); the reply is discarded from the LLM "
        "cache, so the next run asks again (view judge_failures)."
    ),
    "lme judge reading": (
        "how a LongMemEval LLM judge reply becomes a verdict. official (default of lme_official_llm_judge, as "
        "xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py): correct iff 'yes' in reply.lower(); an empty reply is "
        "wrong. strict (default of lme_llm_judge; params.reading selects either): a clear yes/no, anything else is a "
        "failed judgment retried next run. The judgment's details record the reading."
    ),
    "lme_official_accuracy": (
        "LongMemEval's aggregates as src/evaluation/print_qa_metrics.py prints them (xiaowu0162/LongMemEval): "
        "accuracy per question type (abstention questions stay in their type), task_averaged = mean of the six "
        "type accuracies (NULL unless all six have scored questions), overall = all scored questions, abstention = "
        "questions whose id contains _abs. Denominators are scored questions; failures are counted apart (n_failed)."
    ),
    "locomo_official_categories": (
        "LoCoMo's per-category table as task_eval/evaluation_stats.py analyze_aggr_acc prints it (snap-research/"
        "locomo, branch code): categories in the order 4, 1, 2, 3, 5, each the mean of the judge's score; overall "
        "= all categories; overall_without_5 = categories 1-4. Denominators are scored questions (failures apart)."
    ),
    "locomo_official_recall": (
        "LoCoMo's recall per category (evaluation_stats.py, rag): sum of the official per-question evidence recall "
        "of the reader's context over questions WITH evidence, divided by ALL questions of the category with a "
        "successful retrieval; overall = sum over categories / all those questions."
    ),
    "locomo_official_by_distance": (
        "accuracy by distance of the oldest evidence (evaluation_stats.py): bin = ceil(T / 1000), T = whitespace "
        "tokens of the conversation ('speaker: text\\n' per turn, sessions in number order) up to and including "
        "the oldest evidence turn (earliest session, then its earliest dialogue); parentheses in evidence ids are "
        "dropped and a question whose evidence does not parse is left out, as the script does. The script reads "
        "clean_text, absent from the released locomo10.json: its text field is read instead."
    ),
    "repeat_report": (
        "a reader with repeats: N answers each question (unit <system>/<reader>~<r>, r >= 2, asked with sampling seed "
        "r, so each repeat has its own LLM cache key). Per repeat: accuracy; mean_accuracy and sd_accuracy = mean and "
        "sample standard deviation (n - 1) across repeats; majority_accuracy = share of questions where MORE than half "
        "of the repeats that scored it are correct (a tie is not a majority). Failures are counted apart, never a "
        "vote. judge_repeat_report: the same over a judge's repeats (<answer unit>/<judge>~<r>) of identical answers."
    ),
    "retrieval exclusions": (
        "LongMemEval abstention questions (id ends in _abs) and questions without gold units at the level are "
        "excluded and counted (n_excluded_abstention, n_excluded_no_gold); LongMemEval gold = user turns with "
        "has_answer in answer sessions, and answer sessions holding such a turn."
    ),
    "memory flat_bm25": (
        "LongMemEval's flat-bm25 retriever (xiaowu0162/LongMemEval src/retrieval/run_retrieval.py): documents = user "
        "turns as given (granularity turn) or each session's user turns joined by a space (session); tokens = "
        "split(' '); BM25Okapi k1 1.5, b 0.75, negative idf floored to 0.25 x mean idf; ranked argsort(scores)[::-1]; "
        "every document ranked (top_k: null). Rankings equal the official ones on all 498 LongMemEval_S questions."
    ),
    "memory flat_dense": (
        "LongMemEval's flat dense retrieval (same file, run_flat_retrieval) with a local sentence-transformers model "
        "(params.model; else the run's embeddings): protocol contriever = inner product of unnormalised vectors, "
        "stella = of L2-normalised ones, gte = normalised with the query 'Instruction: <task>\\nQuery: <question>'; "
        "same corpus as flat_bm25; ranked by descending score."
    ),
    "memory locomo_rag": (
        "LoCoMo's RAG databases (snap-research/locomo task_eval/evaluate_gpts.py prepare_for_rag, get_rag_context): "
        "mode dialog ('<speaker> said, \"<text>\"' per turn), observation (the shipped facts, citing dialogue ids) "
        "or summary (the shipped session summaries, session S<n>); inner product with the run's embeddings, top_k "
        "(default 5); context '<date>: <entry>' lines. Its recall: locomo_official_recall (session hits for summaries)."
    ),
}


def judge_metric_definitions() -> dict[str, str]:
    """Pinned judge metric -> its registered description (empty when judges cannot be imported)."""
    try:
        from pipeline.kinds.judges import metric_info
    except ImportError:
        return {}
    return {name: f"{v['description']} (aggregate: {v['aggregate']})" for name, v in metric_info().items()}


def reader_display(reader: str, label: str | None) -> str:
    """Reader name as shown in reports; offline readers are marked so nobody mistakes them for an LLM."""
    return f"{reader} [{OFFLINE_LABEL}]" if label == "offline" else reader
