"""The stage assets' ``stage_rows`` check (assets/question_assets.py) over what the stage wrote."""

from pathlib import Path

import dagster as dg
import pyarrow as pa

from assets.question_assets import _rows_check
from pipeline.run.stage import STATUS_NAMES
from tests.run.test_stage import FAIL, KEYS, ConfigFile, run_stage, setup

__all__ = ["setup"]  # the stage driver's fixture, used here


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
