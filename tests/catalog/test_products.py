"""``product_sessions`` / ``product_usage``: a product memory's spend per session and per system, in SQL.

The store is the report fixture's, with the ``bm25`` system of dataset ``lme`` turned into a
product memory: ingestion checkpoints carrying ``product_session`` markers (two haystacks, three
sessions) and retrieval rows whose notes carry the proxy's ``search_usage``; one search failed.
Every figure is checked against the hand sums.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.catalog.docs import column_doc
from pipeline.memory.base import MemoryUnit
from pipeline.memory.checkpoint import Checkpoint, CheckpointState, checkpoint_path, save
from pipeline.products.base import KIND_PRODUCT_SESSION
from pipeline.report.build import collect
from pipeline.report.html import render_dataset
from pipeline.store.results import ResultStore, open_catalog
from tests.support.report import build_full_store

# (haystack, session, prompt tokens, completion tokens, upstream calls, cost, seconds)
SESSIONS = [
    ("h1", "s0", 100, 20, 1, 0.01, 2.0),
    ("h1", "s1", 200, 40, 2, 0.02, 4.0),
    ("h2", "s0", 100, 20, 0, 0.0, 9.0),
]
# retrievals of bm25 on lme: question -> (status, search LLM calls, prompt tokens, latency)
SEARCHES = {"lme__q1": ("ok", 1, 30, 0.1), "lme__q2": ("ok", 0, 0, 0.3), "lme__q3_abs": ("ok", 2, 50, 0.2)}


def _marker(haystack: str, session: str, pt: int, ct: int, up: int, cost: float, seconds: float) -> MemoryUnit:
    usage = {
        "llm_calls": 2, "upstream_llm_calls": up, "failed_llm_calls": 0, "prompt_tokens": pt, "completion_tokens": ct,
        "cost_usd": cost, "embed_calls": 3, "embed_texts": 3, "embed_tokens": 12, "seconds": seconds, "memories": 1,
        "upstream_attempts": up,
    }  # fmt: skip
    when = dt.datetime(2023, 1, 1)
    unit_id = f"{session}#{KIND_PRODUCT_SESSION}"
    return MemoryUnit(unit_id, haystack, session, 0, (), json.dumps(usage), when, "system", KIND_PRODUCT_SESSION)


def _note(haystack: str, session: str) -> MemoryUnit:
    return MemoryUnit(f"{session}#m", haystack, session, 0, (), "a memory", None, "memory", "note")


def _set_retrievals(store: ResultStore) -> None:
    for key in [*SEARCHES, "lme__q4"]:
        path = store.partition_path("retrievals", key)
        rows = pq.read_table(path).to_pylist()
        for r in rows:
            if r["unit"] != "bm25":
                continue
            if key == "lme__q4":  # a failed search: counted apart, no latency
                r.update(status="failed", error="ProductError: boom", notes=None, retrieval_latency_s=None)
                continue
            _, calls, pt, latency = SEARCHES[key]
            usage = {"llm_calls": calls, "upstream_llm_calls": calls, "prompt_tokens": pt, "completion_tokens": calls,
                     "cost_usd": 0.001 * calls, "embed_calls": 1}  # fmt: skip
            r.update(notes=json.dumps({"source_ids": "session", "search_usage": usage}), retrieval_latency_s=latency)
        store.write_partition("retrievals", key, pa.Table.from_pylist(rows, schema=pq.read_schema(path)))


def _save_checkpoints(store: ResultStore) -> None:
    """The product memory's checkpoints of SESSIONS, one per haystack."""
    for haystack in ("h1", "h2"):
        units = [u for h, *rest in SESSIONS if h == haystack for u in (_note(h, rest[0]), _marker(h, *rest))]
        n = len(units) // 2
        save(
            checkpoint_path(store, "bm25", "lme", haystack),
            Checkpoint(CheckpointState("bm25", "mem0", "x", "f", n, n, 1.0), units),
        )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ResultStore:
    store = build_full_store(tmp_path_factory.mktemp("products") / "results")
    _save_checkpoints(store)
    _set_retrievals(store)
    store.refresh_catalog()
    return store


def test_product_sessions_one_row_per_marker(store: ResultStore) -> None:
    with open_catalog(store.catalog_path) as con:
        rows = con.execute(
            "SELECT system, dataset, haystack_id, session_key, prompt_tokens, upstream_llm_calls, cost_usd, seconds, "
            "memories FROM product_sessions ORDER BY haystack_id, session_key"
        ).fetchall()
    assert rows == [("bm25", "lme", h, s, pt, up, cost, sec, 1) for h, s, pt, _, up, cost, sec in SESSIONS]


def test_product_usage_sums_ingestion_and_search(store: ResultStore) -> None:
    with open_catalog(store.catalog_path) as con:
        cur = con.execute("SELECT * FROM product_usage")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    assert len(rows) == 1  # only the product system, not the other systems of the run
    r = rows[0]
    assert (r["dataset"], r["system"], r["n_haystacks"], r["n_sessions"]) == ("lme", "bm25", 2, 3)
    assert (r["ingest_llm_calls"], r["ingest_upstream_llm_calls"], r["ingest_failed_llm_calls"]) == (6, 3, 0)
    assert (r["ingest_prompt_tokens"], r["ingest_completion_tokens"]) == (400, 80)
    assert r["ingest_cost_usd"] == pytest.approx(0.03)
    assert (r["ingest_embed_calls"], r["memories_written"]) == (9, 3)
    assert r["ingest_seconds"] == pytest.approx(15.0) and r["ingest_seconds_per_session"] == pytest.approx(5.0)
    assert r["ingest_seconds_p50"] == pytest.approx(4.0)
    assert (r["n_searches"], r["n_searches_failed"]) == (3, 1)
    assert (r["search_llm_calls"], r["search_upstream_llm_calls"], r["search_prompt_tokens"]) == (3, 3, 80)
    assert (r["search_completion_tokens"], r["search_embed_calls"]) == (3, 3)
    assert r["search_cost_usd"] == pytest.approx(0.003)
    assert r["search_latency_p50_s"] == pytest.approx(0.2)
    assert r["search_latency_p95_s"] == pytest.approx(0.29)  # linear percentile of 0.1, 0.2, 0.3


def test_views_absent_without_a_product_memory(tmp_path: Path) -> None:
    store = build_full_store(tmp_path / "results")
    with open_catalog(store.catalog_path) as con:
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert not {"product_sessions", "product_usage"} & views


def test_every_column_is_documented(store: ResultStore) -> None:
    with open_catalog(store.catalog_path) as con:
        for view in ("product_sessions", "product_usage"):
            cols = [r[0] for r in con.execute(f"SELECT column_name FROM (DESCRIBE {view})").fetchall()]
            assert all(column_doc(view, c) for c in cols), [c for c in cols if not column_doc(view, c)]


def test_report_section(store: ResultStore) -> None:
    """The dataset page has the product table (results.json the same rows); other datasets do not."""
    data = collect(store)
    assert [(r["system"], r["n_sessions"]) for r in data.rows("product_usage")] == [("bm25", 3)]
    page = render_dataset(data, "lme", [])
    assert "<h2>Memory products: ingestion and search cost</h2>" in page
    section = page.split("<h2>Memory products: ingestion and search cost</h2>", 1)[1]
    row = section.split("<td>bm25</td>", 1)[1].split("</tr>", 1)[0]
    cells = [c.removesuffix("</td>") for c in row.split("<td>")[1:]]
    assert cells == ["2", "3", "6 (3)", "400 + 80", "$0.0300", "5.00 s, 4.00 s", "3 (1 failed)", "3 (3)", "80 + 3",
                     "200 ms / 290 ms"]  # fmt: skip
    assert "Memory products" not in render_dataset(data, "loco", [])


def test_catalog_memory_views_read_its_fixed_files(tmp_path: Path) -> None:
    """The catalog's ``product_sessions`` reads the checkpoints as they were when it was built, like
    its base views: a checkpoint a running stage replaces or retires afterwards changes nothing.

    Why: its checkpoint glob was relative to the results folder, so it read the LIVE
    ``parquet/memory/`` files, not the catalog's hard links (pipeline/store/catalog_files.py):
    rows changed under a fixed catalog, and a file retired between glob and open failed the query.
    """
    store = build_full_store(tmp_path / "results")
    _save_checkpoints(store)
    store.refresh_catalog()
    query = "SELECT system, dataset, haystack_id, session_key, prompt_tokens FROM product_sessions ORDER BY ALL"
    with open_catalog(store.catalog_path) as con:
        before = con.execute(query).fetchall()
        questions = con.execute("SELECT count(*) FROM questions").fetchall()
    assert before == [("bm25", "lme", h, s, pt) for h, s, pt, *_ in SESSIONS]
    checkpoint_path(store, "bm25", "lme", "h2").unlink()  # retired by a run after the catalog was built
    with open_catalog(store.catalog_path) as con:
        assert con.execute(query).fetchall() == before
        assert con.execute("SELECT count(*) FROM questions").fetchall() == questions
    moved = tmp_path / "moved"  # its globs stay relative: a copied results folder's catalog reads its own files
    shutil.copytree(store.root, moved)
    with open_catalog(moved / store.catalog_path.name) as con:
        assert con.execute(query).fetchall() == before
