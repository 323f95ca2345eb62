"""``membench forget`` and the failure message naming it (pipeline/cli/forget.py, pipeline/run/stale.py).

A real small results folder, written by the stage driver (no Dagster): two memory systems, the
second failing every question, then renamed in the config. The old name's failed rows keep every
question failed (the progress rule, unchanged); the run's message, ``membench failed`` and the
run's check-step failure name the old system and ``membench forget``; the dry run changes no file;
``--yes`` removes exactly the old system's rows and checkpoints; after it a rerun has 0 failed and
``membench progress`` agrees.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cli.forget import ORPHAN_REASON, apply_plan, plan_forget, product_state_dirs
from pipeline.cli.main import main
from pipeline.config.model import BenchmarkConfig, load_config
from pipeline.kinds.resolve import resolve_config
from pipeline.memory import checkpoint
from pipeline.products.mem0_memory import Mem0Memory
from pipeline.run.stage import QuestionStage, StageOutcome, UnitResult, UnitSpec, WorkItem, timed
from pipeline.run.status_index import StageIndex
from pipeline.store.results import STAGE_TABLES, ResultStore

PAYLOAD = pa.schema([("value", pa.int64())])
KEYS = [f"d__q{i}" for i in range(4)]
STAGES = ("retrievals", "answers")  # units: "<system>" and "<system>/offline"
FAILING: set[str] = set()  # systems whose every unit fails
HINT = "`membench forget old_name` removes them"


def _write_config(path: Path, results: Path, systems: tuple[str, ...], kind: str = "flat_bm25") -> str:
    entries = "".join(f"  - {{name: {s}, kind: {kind}}}\n" for s in systems)
    path.write_text(
        f"results_dir: {results}\ndatasets: [{{name: d, loader: locomo, path: x}}]\nmemory_systems:\n{entries}"
    )
    load_config.cache_clear()
    return str(path)


def _units(cfg: BenchmarkConfig, stage: str) -> list[UnitSpec]:
    suffix = "/offline" if stage == "answers" else ""
    return [UnitSpec(f"{s.name}{suffix}", "h") for s in cfg.memory_systems]


def _compute(items: list[WorkItem]) -> Iterator[tuple[str, list[UnitResult]]]:
    for item in items:
        results = []
        for spec in item.units:

            def work(unit: str = spec.unit) -> dict[str, int]:
                if unit.split("/")[0] in FAILING:
                    raise RuntimeError("endpoint said no")
                return {"value": len(unit)}

            results.append(timed(work, spec))
        yield item.partition_key, results


def run_stages(config: str) -> dict[str, StageOutcome]:
    """One run of both stages over every key (what a `dagster job execute` does to these files)."""
    cfg = load_config(config)
    store = ResultStore(results_dir=str(cfg.resolved_results_dir()))
    out = {}
    for stage in STAGES:
        units = _units(cfg, stage)
        driver = QuestionStage(store, cfg, stage=stage, payload_schema=PAYLOAD, units_for=lambda _ds, u=units: u)
        out[stage] = driver.run(KEYS, _compute)
    return out


def _checkpoint(store: ResultStore, system: str) -> None:
    state = checkpoint.CheckpointState(system, "flat_bm25", "h", "fp", 1, 1, 0.1)
    checkpoint.save(checkpoint.checkpoint_path(store, system, "d", "conv-1"), checkpoint.Checkpoint(state))


def _retrieval_metrics(store: ResultStore) -> None:
    """The derived per-dataset table, as the report step leaves it: one row per (question, system)."""
    from pipeline.report.retrieval_table import RETRIEVAL_METRICS_SCHEMA, table_path

    rows = [
        {"dataset": "d", "partition_key": k, "question_id": k[3:], "system": s, "level": "turn", "outcome": "scored"}
        for k in KEYS
        for s in ("keep_me", "old_name")
    ]
    store.write(table_path(store, "d"), pa.Table.from_pylist(rows, schema=RETRIEVAL_METRICS_SCHEMA))


@pytest.fixture()
def renamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ResultStore]:
    """Results of keep_me + old_name (old_name failed everywhere), then old_name renamed new_name.

    No ``$DAGSTER_HOME``: `forget --yes` asks that instance for live runs, and the shell's is not the test's.
    """
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    store = ResultStore(results_dir=str(tmp_path / "res"))
    questions = {"dataset": ["d"] * 4, "partition_key": KEYS, "question_id": [k[3:] for k in KEYS]}
    store.write(store.canonical_path("d", "questions"), pa.table(questions))
    config = _write_config(tmp_path / "c.yaml", store.root, ("keep_me", "old_name"))
    FAILING.clear()
    FAILING.add("old_name")
    run_stages(config)
    for system in ("keep_me", "old_name"):
        _checkpoint(store, system)
    _retrieval_metrics(store)
    FAILING.clear()
    return _write_config(tmp_path / "c.yaml", store.root, ("keep_me", "new_name")), store


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(argv)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def file_hashes(root: Path) -> dict[str, str]:
    files = (p for p in root.rglob("*") if p.is_file())
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def stage_rows(store: ResultStore) -> dict[str, list[dict[str, object]]]:
    """Every stored row per stage, in file order (finished_at as text: compared exactly)."""
    out: dict[str, list[dict[str, object]]] = {}
    for stage in STAGE_TABLES:
        for path in sorted((store.parquet_root / stage).glob("*.parquet")):
            out.setdefault(stage, []).extend(pq.read_table(path).to_pylist())
    return out


def progress_failed(config: str, capsys: pytest.CaptureFixture[str]) -> dict[str, int]:
    """stage -> failed questions, as `membench progress` prints them."""
    rc, out, _ = cli(["--config", config, "progress"], capsys)
    assert rc == 0
    header, _rule, *rows = out.strip().splitlines()
    cols = [c.strip() for c in header.split("|")]
    table = [dict(zip(cols, (v.strip() for v in r.split("|")), strict=True)) for r in rows]
    return {r["stage"]: int(r["failed"]) for r in table}


def test_the_run_names_the_old_system_and_how_to_forget_it(renamed: tuple[str, ResultStore]) -> None:
    config, _ = renamed
    outcomes = run_stages(config)
    for stage in STAGES:
        failed = outcomes[stage].failed
        assert sorted(failed) == KEYS, stage  # the rule is unchanged: the stored failed rows fail them
        for message in failed.values():
            assert "'old_name'" in message and HINT in message and "endpoint said no" in message
            assert "\n" not in message


def test_the_check_step_failure_names_the_old_system(renamed: tuple[str, ResultStore]) -> None:
    """What a run prints at its end: the stage check's failure, from the progress view plus the config."""
    from assets.question_assets import failed_questions
    from assets.run_console import questions_failed
    from pipeline.run.stale import explain_failures

    config, store = renamed
    run_stages(config)
    failed = explain_failures(store, load_config(config), "answers", failed_questions(store, "answers", KEYS))
    assert [k for k, _ in failed] == KEYS and all(HINT in e for _, e in failed)
    message = str(questions_failed("answers", len(KEYS), failed).description)
    assert "4 of 4 questions of this run failed" in message and HINT in message


def test_membench_failed_names_it_one_line_per_question(
    renamed: tuple[str, ResultStore], capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = renamed
    run_stages(config)
    rc, out, _ = cli(["--config", config, "failed"], capsys)
    listed = [line for line in out.splitlines() if line.startswith(STAGES)]
    assert rc == 1 and len(listed) == len(KEYS) * len(STAGES)  # exit 1: questions failed
    assert all(HINT in line and "endpoint said no" in line for line in listed)
    [line] = [line for line in out.splitlines() if "no run retries them" in line]
    assert line.endswith(f":  MEMBENCH_CONFIG={config} membench forget old_name")  # copied as printed


def test_only_systems_no_longer_configured_are_named(renamed: tuple[str, ResultStore]) -> None:
    config, store = renamed
    FAILING.add("broken")  # a configured system failing: retried by the next run, so no hint names it
    try:
        outcomes = run_stages(_write_config(Path(config), store.root, ("keep_me", "new_name", "broken")))
    finally:
        FAILING.clear()
    for message in outcomes["answers"].failed.values():
        assert message.startswith("[stored failed rows of memory system 'old_name', not in the config any more")
        assert "broken" not in message.split("]")[0]
    FAILING.add("old_name")  # configured again (and failing again): its own error, nothing to forget
    try:
        outcomes = run_stages(_write_config(Path(config), store.root, ("keep_me", "old_name", "broken")))
    finally:
        FAILING.clear()
    assert set(outcomes["answers"].failed.values()) == {"RuntimeError: endpoint said no"}


def test_dry_run_changes_nothing(renamed: tuple[str, ResultStore], capsys: pytest.CaptureFixture[str]) -> None:
    config, store = renamed
    run_stages(config)
    before = file_hashes(store.root)
    rc, out, err = cli(["--config", config, "forget", "old_name"], capsys)
    assert (rc, err) == (0, "")
    assert file_hashes(store.root) == before
    assert "dry run, nothing removed; add --yes to remove" in out
    rows = {line.split("|")[0].strip(): [c.strip() for c in line.split("|")[1:]] for line in out.splitlines()}
    assert rows["retrievals"] == ["4", "4", "4"] and rows["answers"] == ["4", "4", "4"]
    assert "remove folder: parquet/memory/old_name (ingestion checkpoints)" in out
    assert "remove 4 row(s) from parquet/retrieval_metrics/d.parquet (derived from the retrievals)" in out


def test_yes_removes_exactly_the_old_rows(renamed: tuple[str, ResultStore], capsys: pytest.CaptureFixture[str]) -> None:
    config, store = renamed
    run_stages(config)
    assert progress_failed(config, capsys) == {"canonical": 0, "ingestion": 0, "retrievals": 4, "answers": 4,
                                               "judgments": 0}  # fmt: skip
    before = stage_rows(store)
    rc, out, _ = cli(["--config", config, "forget", "old_name", "--yes"], capsys)
    assert rc == 0 and "removed 8 row(s) and 1 folder(s)" in out
    after = stage_rows(store)
    for stage in STAGES:
        others = [r for r in before[stage] if not str(r["unit"]).startswith("old_name")]
        assert len(others) == 2 * len(KEYS) and after[stage] == others  # every other row, every value
    assert not (store.parquet_root / "memory" / "old_name").exists()
    assert (store.parquet_root / "memory" / "keep_me" / "d").is_dir()
    assert not any((store.root / ".forgotten").glob("*"))
    for stage in STAGES:  # the status index never serves the removed rows
        index = StageIndex(store.parquet_root, stage)
        assert all(not r["unit"].startswith("old_name") for k in KEYS for r in index.rows_for(k) or ())
    assert store.query("SELECT count(*) AS n FROM answers WHERE unit LIKE 'old_name%'").column("n")[0].as_py() == 0
    metrics = store.query("SELECT DISTINCT system FROM retrieval_metrics").column("system").to_pylist()
    assert metrics == ["keep_me"]

    # a rerun computes nothing new and reports 0 failed; `membench progress` and `membench failed` agree
    outcomes = run_stages(config)
    assert all(not o.failed and o.keys_already_done == len(KEYS) for o in outcomes.values())
    assert set(progress_failed(config, capsys).values()) == {0}
    rc, out, _ = cli(["--config", config, "failed"], capsys)
    assert rc == 0 and "no failed questions" in out


def test_forgetting_every_system_removes_the_emptied_files(
    renamed: tuple[str, ResultStore], capsys: pytest.CaptureFixture[str]
) -> None:
    config, store = renamed
    run_stages(config)
    rc, out, _ = cli(["--config", config, "forget", "old_name", "keep_me", "new_name", "--yes"], capsys)
    assert rc == 0 and "keep_me is still configured: the next run recomputes it" in out
    assert not [p for s in STAGES for p in (store.parquet_root / s).glob("*.parquet")]
    assert not (store.parquet_root / "memory" / "keep_me").exists()
    outcomes = run_stages(config)
    assert all(o.keys_computed == len(KEYS) and not o.failed for o in outcomes.values())


# names -> lines the dry run prints (exit status 0 every time)
MESSAGES: list[tuple[list[str], list[str]]] = [
    (["no_such_system"], ["nothing stored for no_such_system under", "nothing to forget"]),
    (["old_name", "no_such_system"], ["no_such_system: nothing stored under this name", "dry run"]),
    (["keep_me"], ["keep_me is still configured: the next run recomputes it", "retrievals | 4"]),
    (["new_name"], ["new_name is still configured: the next run recomputes it", "answers    | 4"]),
]


@pytest.mark.parametrize(("names", "expected"), MESSAGES)
def test_messages(
    names: list[str], expected: list[str], renamed: tuple[str, ResultStore], capsys: pytest.CaptureFixture[str]
) -> None:
    config, store = renamed
    run_stages(config)
    before = file_hashes(store.root)
    rc, out, err = cli(["--config", config, "forget", *names], capsys)
    assert (rc, err) == (0, "")
    for text in expected:
        assert text in out, out
    assert file_hashes(store.root) == before


def test_unknown_name_with_yes_is_a_clean_no_op(
    renamed: tuple[str, ResultStore], capsys: pytest.CaptureFixture[str]
) -> None:
    config, store = renamed
    before = file_hashes(store.root)
    rc, out, err = cli(["--config", config, "forget", "no_such_system", "--yes"], capsys)
    assert (rc, err) == (0, "") and "nothing to forget" in out and "removed" not in out
    assert file_hashes(store.root) == before


def test_product_state_shared_by_a_configured_name_is_kept(tmp_path: Path) -> None:
    """Product state is keyed by kind + params: forgetting one of two names with the same params keeps it."""
    store = ResultStore(results_dir=str(tmp_path / "res"))
    config = _write_config(tmp_path / "p.yaml", store.root, ("m_a", "m_b"), kind="mem0")
    cfg = load_config(config)
    dirs = product_state_dirs(cfg)
    assert dirs["m_a"] == dirs["m_b"] and dirs["m_a"].startswith("mem0-")
    built = Mem0Memory.__new__(Mem0Memory)  # the name an instance gives its state (no deps needed for it)
    built.params = resolve_config(cfg).memory_systems[0].params
    assert dirs["m_a"] == f"mem0-{built.params_hash()}"
    shared = store.root / "products" / dirs["m_a"]
    (shared / "conv-1").mkdir(parents=True)
    plan = plan_forget(store, cfg, ["m_b"])
    assert plan.product_dirs == () and [k.path for k in plan.kept] == [shared]
    assert "m_a" in plan.kept[0].reason

    alone = load_config(_write_config(tmp_path / "p.yaml", store.root, ("m_b",), kind="mem0"))
    plan = plan_forget(store, alone, ["m_b"])
    assert plan.product_dirs == (shared,) and plan.still_configured == ("m_b",)
    apply_plan(store, plan)
    assert not shared.exists() and not (store.root / ".forgotten").exists()


def test_product_state_of_an_unconfigured_name_is_listed_not_removed(tmp_path: Path) -> None:
    """A name gone from the config: its params are unknown, so its kind's unused state dirs are only listed."""
    store = ResultStore(results_dir=str(tmp_path / "res"))
    cfg = load_config(_write_config(tmp_path / "p.yaml", store.root, ("m_a",), kind="mem0"))
    used = store.root / "products" / product_state_dirs(cfg)["m_a"]
    orphan = store.root / "products" / "mem0-0123456789ab"
    other_kind = store.root / "products" / "langmem-0123456789ab"
    for folder in (used, orphan, other_kind):
        folder.mkdir(parents=True)
    state = checkpoint.CheckpointState("m_gone", "mem0", "h", "fp", 1, 1, 0.1)
    checkpoint.save(checkpoint.checkpoint_path(store, "m_gone", "d", "c1"), checkpoint.Checkpoint(state))
    plan = plan_forget(store, cfg, ["m_gone"])
    assert plan.product_dirs == () and plan.checkpoints == (store.parquet_root / "memory" / "m_gone",)
    assert [(k.path, k.reason) for k in plan.kept] == [(orphan, ORPHAN_REASON)]


def test_finished_at_is_kept_exactly(renamed: tuple[str, ResultStore], capsys: pytest.CaptureFixture[str]) -> None:
    """Timestamps and schema of the kept rows are the file's own (no re-typing on rewrite)."""
    config, store = renamed
    path = store.partition_path("answers", KEYS[0])
    schema = pq.read_schema(path)
    stamp = [r["finished_at"] for r in pq.read_table(path).to_pylist() if r["unit"] == "keep_me/offline"]
    cli(["--config", config, "forget", "old_name", "--yes"], capsys)
    assert pq.read_schema(path) == schema
    kept = pq.read_table(path).to_pylist()
    assert [r["finished_at"] for r in kept] == stamp and isinstance(stamp[0], dt.datetime)


def test_yes_refuses_while_a_run_of_the_config_is_live(
    renamed: tuple[str, ResultStore],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A live run (its process alive) of the same config on $DAGSTER_HOME's instance: nothing is touched."""
    import dagster as dg

    from assets.layout import TAG_CONFIG, _process_tags

    config, store = renamed
    home = tmp_path / "dagster_home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    instance = dg.DagsterInstance.get()
    run = dg.DagsterRun(job_name="full_benchmark", status=dg.DagsterRunStatus.STARTED,
                        tags={TAG_CONFIG: load_config(config).config_name, **_process_tags()})  # fmt: skip
    instance.add_run(run)
    instance.dispose()
    before = file_hashes(store.root)
    rc, out, err = cli(["--config", config, "forget", "old_name", "--yes"], capsys)
    assert rc == 2 and f"run {run.run_id} of config 'c' is running" in err and len(err.splitlines()) == 1
    assert out == "" and {k: v for k, v in file_hashes(store.root).items() if k != ".run_claim.lock"} == before


def test_a_key_of_a_removed_dataset_fails_with_its_message(renamed: tuple[str, ResultStore], tmp_path: Path) -> None:
    """The stage's units of a dataset the config no longer has raise KeyError: the message is built anyway."""
    config, store = renamed
    other = tmp_path / "other.yaml"
    other.write_text(Path(config).read_text().replace("{name: d,", "{name: e,"))
    load_config.cache_clear()
    cfg = load_config(str(other))

    def units(dataset: str) -> list[UnitSpec]:
        cfg.dataset(dataset)  # KeyError for "d", as the real stages' unit builders raise
        return _units(cfg, "answers")

    driver = QuestionStage(store, cfg, stage="answers", payload_schema=PAYLOAD, units_for=units)
    message = driver.run([KEYS[0]], _compute).failed[KEYS[0]]
    assert message.startswith("[stored failed rows of memory system 'old_name'") and "\n" not in message
