"""The per-question stage driver (no Dagster): resume, failure rows, the dead-endpoint breaker; and the
stage assets' ``stage_rows`` check (assets/question_assets.py) over the tables the driver wrote."""

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from assets.question_assets import _rows_check
from pipeline.config.model import BenchmarkConfig, load_config
from pipeline.llm.protocol import UNREACHABLE_CONNECTION
from pipeline.run.stage import STATUS_NAMES, QuestionStage, StageOutcome, UnitResult, UnitSpec, WorkItem, timed
from pipeline.store.results import ResultStore

PAYLOAD = pa.schema([("value", pa.int64())])
CALLS: list[str] = []
FAIL: set[str] = set()
DEAD: set[str] = set()  # questions whose calls cannot reach the endpoint
KEYS = [f"d__q{i}" for i in range(5)]


def _units(_dataset: str) -> list[UnitSpec]:
    return [UnitSpec("sys_a", "h1"), UnitSpec("sys_b", "h2")]


def _compute(items: list[WorkItem]) -> Iterator[tuple[str, list[UnitResult]]]:
    for item in items:
        results = []
        for spec in item.units:
            CALLS.append(f"{item.partition_key}/{spec.unit}")

            def work(key: str = item.partition_key) -> dict[str, int]:
                if key in FAIL:
                    raise RuntimeError("boom")
                if key in DEAD:
                    raise RuntimeError(f"LLM call failed: {UNREACHABLE_CONNECTION}[Errno 111] Connection refused")
                return {"value": len(key)}

            results.append(timed(work, spec))
        yield item.partition_key, results


class ConfigFile:
    """A config file and its result store, read afresh on each call (edits between calls count)."""

    def __init__(self, config_path: str) -> None:
        self.config_path = config_path

    def load(self) -> BenchmarkConfig:
        return load_config(self.config_path)

    def store(self) -> ResultStore:
        return ResultStore(results_dir=str(self.load().resolved_results_dir()))


def run_stage(res: ConfigFile, keys: list[str], stop_after: int = 0) -> StageOutcome:
    stage = QuestionStage(
        res.store(),
        res.load(),
        stage="answers",
        payload_schema=PAYLOAD,
        units_for=_units,
        stop_after_unreachable=stop_after,
    )
    return stage.run(keys, _compute)


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[ConfigFile, Path]:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"results_dir: {tmp_path / 'res'}\ndatasets: [{{name: d, loader: locomo, path: x}}]\n")
    res = ConfigFile(config_path=str(cfg))
    store = res.store()
    keys = [f"d__q{i}" for i in range(4)]
    store.write(
        store.canonical_path("d", "questions"),
        pa.table(
            {
                "dataset": ["d"] * 4,
                "partition_key": keys,
                "question_id": [f"q{i}" for i in range(4)],
                "question": [f"text {i}" for i in range(4)],
            }
        ),
    )
    store.write(
        store.canonical_path("d", "load_failures"),
        pa.table(
            {
                "dataset": ["d"],
                "file": ["x"],
                "record_index": [4],
                "record_id": ["q4"],
                "partition_key": ["d__q4"],
                "field": ["question"],
                "message": ["x record 4 (q4): missing field 'question'"],
            }
        ),
    )
    CALLS.clear()
    FAIL.clear()
    DEAD.clear()
    load_config.cache_clear()
    return res, tmp_path


def test_failures_recorded_resumed_and_outcome_exact(setup: tuple[ConfigFile, Path]) -> None:
    res, _ = setup
    store = res.store()
    FAIL.add("d__q2")
    outcome = run_stage(res, KEYS)
    assert len(CALLS) == 8  # 4 loadable questions x 2 units; q4 never reaches compute
    rows = store.query("SELECT partition_key, unit, status, error FROM answers ORDER BY ALL").to_pylist()
    assert len(rows) == 10
    failed = {(r["partition_key"], r["unit"]) for r in rows if r["status"] == "failed"}
    assert failed == {("d__q2", "sys_a"), ("d__q2", "sys_b"), ("d__q4", "sys_a"), ("d__q4", "sys_b")}
    assert any("missing field 'question'" in (r["error"] or "") for r in rows)
    assert set(outcome.failed) == {"d__q2", "d__q4"}  # exactly what the progress view calls failed
    assert outcome.failed["d__q2"] == "RuntimeError: boom"
    assert (outcome.keys_total, outcome.keys_computed, outcome.units_ok, outcome.units_failed) == (5, 5, 6, 4)

    # second run: only the failed question is recomputed; no duplicate rows
    FAIL.clear()
    CALLS.clear()
    again = run_stage(res, KEYS)
    assert CALLS == ["d__q2/sys_a", "d__q2/sys_b"]
    assert set(again.failed) == {"d__q4"} and again.keys_already_done == 3
    counts = store.query("SELECT partition_key, count(*) AS n FROM answers GROUP BY 1").to_pylist()
    assert all(c["n"] == 2 for c in counts)
    progress = store.query("SELECT partition_key, status FROM progress WHERE stage='answers' ORDER BY 1")
    assert progress.column("status").to_pylist() == ["done", "done", "done", "done", "failed"]


def test_only_the_given_keys_run(setup: tuple[ConfigFile, Path]) -> None:
    res, _ = setup
    outcome = run_stage(res, ["d__q1"])
    assert CALLS == ["d__q1/sys_a", "d__q1/sys_b"] and outcome.keys_total == 1 and not outcome.failed


def test_key_without_canonical_record_is_a_recorded_failure(setup: tuple[ConfigFile, Path]) -> None:
    res, _ = setup
    outcome = run_stage(res, ["d__q1", "d__gone"])
    assert "no canonical record" in outcome.failed["d__gone"]
    progress = res.store().query("SELECT status FROM answers WHERE partition_key = 'd__gone'").to_pylist()
    assert progress == [{"status": "failed"}]


@pytest.mark.parametrize(
    ("dead", "stop_after", "attempted", "not_attempted"),
    [
        ({"d__q0", "d__q1", "d__q2", "d__q3"}, 2, 2, 2),  # two dead questions in a row stop the stage
        ({"d__q0", "d__q2", "d__q3"}, 2, 4, 0),  # q1 reached the endpoint: the streak restarts
        ({"d__q0", "d__q1", "d__q2", "d__q3"}, 0, 4, 0),  # 0 = never stop
    ],
)
def test_dead_endpoint_stops_the_stage_with_one_error(
    setup: tuple[ConfigFile, Path], dead: set[str], stop_after: int, attempted: int, not_attempted: int
) -> None:
    res, _ = setup
    DEAD.update(dead)
    outcome = run_stage(res, KEYS[:4], stop_after=stop_after)
    assert len({c.split("/")[0] for c in CALLS}) == attempted
    errors = res.store().query("SELECT partition_key, error FROM answers WHERE status = 'failed'").to_pylist()
    skipped = {r["partition_key"] for r in errors if r["error"].startswith("not attempted: answers stopped after")}
    assert len(skipped) == not_attempted
    assert (outcome.stopped is not None) == (not_attempted > 0)
    assert set(outcome.failed) == {r["partition_key"] for r in errors}  # every unattempted one is failed too


def _rewrite_questions(res: ConfigFile, texts: dict[str, str], drop: str | None = None) -> None:
    store = res.store()
    table = store.read_canonical("d", "questions").to_pylist()  # type: ignore[union-attr]
    rows = [
        {**r, "question": texts.get(r["partition_key"], r["question"])} for r in table if r["partition_key"] != drop
    ]
    store.write(store.canonical_path("d", "questions"), pa.Table.from_pylist(rows))


def test_an_edited_record_recomputes_only_its_question(setup: tuple[ConfigFile, Path]) -> None:
    res, _ = setup
    run_stage(res, KEYS[:4])
    CALLS.clear()
    _rewrite_questions(res, {"d__q1": "an edited question"})
    again = run_stage(res, KEYS[:4])
    assert CALLS == ["d__q1/sys_a", "d__q1/sys_b"] and again.keys_already_done == 3
    rows = res.store().query("SELECT count(*) AS n FROM answers WHERE partition_key = 'd__q1'").to_pylist()
    assert rows == [{"n": 2}]  # replaced, not duplicated


def test_a_record_that_became_invalid_loses_its_old_results(setup: tuple[ConfigFile, Path]) -> None:
    res, _ = setup
    run_stage(res, KEYS[:4])
    store = res.store()
    _rewrite_questions(res, {}, drop="d__q3")
    failures = store.read_canonical("d", "load_failures").to_pylist()  # type: ignore[union-attr]
    bad = {**failures[0], "record_id": "q3", "partition_key": "d__q3", "message": "x record 3 (q3): bad answer"}
    store.write(store.canonical_path("d", "load_failures"), pa.Table.from_pylist([*failures, bad]))
    CALLS.clear()
    outcome = run_stage(res, KEYS[:4])
    assert CALLS == [] and "bad answer" in outcome.failed["d__q3"]
    rows = store.query("SELECT status FROM answers WHERE partition_key = 'd__q3'").to_pylist()
    assert rows == [{"status": "failed"}, {"status": "failed"}]  # no ok row survives from the valid record


def test_a_rerun_reads_the_index_not_every_file(setup: tuple[ConfigFile, Path]) -> None:
    res, _ = setup
    store = res.store()
    FAIL.add("d__q2")
    first = run_stage(res, KEYS)
    assert first.files_read == 0  # nothing stored yet
    CALLS.clear()
    again = run_stage(res, KEYS)  # q2 and q4 still failed: q2 recomputed, q4 recorded again
    assert again.files_read == 0 and CALLS == ["d__q2/sys_a", "d__q2/sys_b"]

    # a file changed behind the index (another run, a kill before the index was saved): read again
    table = store.read_partition("answers", "d__q0")
    store.write_partition("answers", "d__q0", table.slice(0, 1))  # type: ignore[union-attr]
    CALLS.clear()
    third = run_stage(res, KEYS)
    assert third.files_read == 1 and "d__q0/sys_b" in CALLS  # the dropped unit is recomputed

    # a damaged or missing index only costs reads, never correctness
    index = store.parquet_root / "_index" / "answers.parquet"
    index.write_bytes(b"not parquet")
    CALLS.clear()
    fourth = run_stage(res, KEYS)
    assert fourth.files_read == 5 and CALLS == ["d__q2/sys_a", "d__q2/sys_b"]
    assert set(fourth.failed) == {"d__q2", "d__q4"}


def test_compute_runs_with_fewer_young_collections(setup: tuple[ConfigFile, Path]) -> None:
    """The stage's compute loop runs under pipeline.util.heap.fewer_collections; restored afterwards."""
    import gc

    from pipeline.util.heap import YOUNG_COLLECTION_EVERY

    res, _ = setup
    seen: list[int] = []

    def compute(items: list[WorkItem]) -> Iterator[tuple[str, list[UnitResult]]]:
        for key, results in _compute(items):
            seen.append(gc.get_threshold()[0])
            yield key, results

    before = gc.get_threshold()
    QuestionStage(res.store(), res.load(), stage="answers", payload_schema=PAYLOAD, units_for=_units).run(
        KEYS[:4], compute
    )
    assert seen and set(seen) == {YOUNG_COLLECTION_EVERY}
    assert gc.get_threshold() == before


def test_stage_failures_equal_the_progress_views_failed_questions(setup: tuple[ConfigFile, Path]) -> None:
    """The stages' checks read failures from the stage files: the same keys and errors as ``progress``."""
    from pipeline.run.status_index import stage_failures

    res, _ = setup
    store = res.store()
    FAIL.add("d__q2")
    run_stage(res, KEYS)
    sql = "SELECT partition_key, errors FROM progress WHERE stage = 'answers' AND status = 'failed' ORDER BY 1"
    from_view = [(r["partition_key"], r["errors"]) for r in store.query(sql).to_pylist()]
    assert stage_failures(store.parquet_root, "answers", KEYS) == from_view
    assert [k for k, _ in from_view] == ["d__q2", "d__q4"]
    assert stage_failures(store.parquet_root, "answers", ["d__q0", "d__q1"]) == []
    assert stage_failures(store.parquet_root, "judgments", KEYS) == []  # a stage with no file yet


def test_the_run_ends_summary_skips_the_view_only_when_it_would_find_no_failure(
    setup: tuple[ConfigFile, Path],
) -> None:
    """``failed_by_stage`` answers from the status indexes when no row failed, else from ``progress``."""
    from assets.run_gate import failed_by_stage, no_failed_rows

    res, _ = setup
    store = res.store()
    FAIL.add("d__q2")
    run_stage(res, KEYS)
    store.refresh_catalog()
    sql = "SELECT partition_key FROM progress WHERE stage = 'answers' AND status = 'failed' ORDER BY 1"
    failed_in_view = [r["partition_key"] for r in store.query(sql).to_pylist()]
    for keys in (KEYS, ["d__q0", "d__q1"], ["d__q2"], ["d__q3"]):
        assert no_failed_rows(store, ["answers"], keys) == (not set(keys) & set(failed_in_view))
        got = failed_by_stage(store, ["answers"], keys)
        assert (got["answers"].n if got else 0) == len(set(keys) & set(failed_in_view))
    assert not no_failed_rows(store, ["answers"], ["d__#7"])  # a keyless load failure's progress key
    assert no_failed_rows(store, ["judgments"], KEYS)  # a stage with no file yet


def test_the_manifests_stored_units_from_the_indexes_equal_the_views(setup: tuple[ConfigFile, Path]) -> None:
    """The manifest's identity reads the status indexes: the same (stage, dataset, unit, hash) as the views."""
    from pipeline.provenance.identity import indexed_units, stored_units

    res, _ = setup
    store = res.store()
    FAIL.add("d__q2")
    run_stage(res, KEYS)
    with store.connect() as con:
        from_views = stored_units(con)
    assert from_views and indexed_units(store.parquet_root) == from_views


def test_the_rows_check_reads_the_tables_as_written_not_the_files(setup: tuple[ConfigFile, Path]) -> None:
    """The stage keeps the status columns of each table it wrote; the ``stage_rows`` check reads
    those (no file read back), and they are exactly the files' status columns, in written order."""
    res, _ = setup
    store = res.store()
    FAIL.add("d__q2")
    outcome = run_stage(res, KEYS)
    on_disk = [store.read_partition("answers", k) for k in outcome.written]
    assert pa.concat_tables(outcome.written_status).equals(
        pa.concat_tables([t.select(STATUS_NAMES) for t in on_disk if t is not None])
    )
    check = _rows_check(outcome, dg.AssetKey(["c", "answers"]))
    assert check.passed and check.metadata["rows"].value == 10 and check.metadata["questions"].value == 5
    for key in outcome.written:  # the check no longer needs the files
        store.partition_path("answers", key).unlink()
    assert _rows_check(outcome, dg.AssetKey(["c", "answers"])) == check

    bad = outcome.written_status[0].to_pylist()
    bad[0] |= {"status": "failed", "error": None}  # a failed row must carry its error
    outcome.written_status[0] = pa.Table.from_pylist(bad, schema=outcome.written_status[0].schema)
    assert not _rows_check(outcome, dg.AssetKey(["c", "answers"])).passed
