"""The ``embeddings`` asset: text collection (plain function) and a real Dagster materialization."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import numpy as np
import pytest
import yaml

from assets.embeddings import ProgressReporter, build_embeddings, collect_unit_texts
from pipeline.config.model import load_config
from pipeline.core.records import SESSIONS_SCHEMA, TURNS_SCHEMA, SessionRow, TurnRow, rows_to_table
from pipeline.embeddings.cache import EmbeddingCache, embeddings_dir
from pipeline.embeddings.encoder import EmbedProgress
from pipeline.store.results import ResultStore
from resources.factory import build_resources


def _turn(ds: str, session: str, pos: int, role: str, text: str, speaker: str | None = None) -> TurnRow:
    return TurnRow(ds, session, f"{session}:{pos}", pos, speaker or role, role, text, False, None)


def _session(ds: str, key: str, summary: str | None) -> SessionRow:
    return SessionRow(ds, key, key, None, None, summary, 2)


def _write(store: ResultStore, ds: str, turns: list[TurnRow], sessions: list[SessionRow]) -> None:
    store.write(store.canonical_path(ds, "turns"), rows_to_table(turns, TURNS_SCHEMA))
    store.write(store.canonical_path(ds, "sessions"), rows_to_table(sessions, SESSIONS_SCHEMA))


def _config(tmp_path: Path, index_roles: list[str] | None = None) -> Path:
    a: dict = {"name": "a", "loader": "locomo", "path": "unused.json"}
    if index_roles is not None:
        a["index_roles"] = index_roles
    cfg = {
        "results_dir": str(tmp_path / "results"),
        "datasets": [a, {"name": "b", "loader": "longmemeval", "path": "unused.json"}],
        "embeddings": {"model": "all-MiniLM-L6-v2", "backend": "fp32"},
    }
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def toy(tmp_path: Path) -> tuple[Path, ResultStore]:
    store = ResultStore(results_dir=str(tmp_path / "results"))
    _write(
        store,
        "a",
        [
            _turn("a", "s1", 0, "user", "I moved to Porto in May.", speaker="Caroline"),
            _turn("a", "s1", 1, "assistant", "How do you like Porto?", speaker="Melanie"),
        ],
        [_session("a", "s1", "  Caroline moved to Porto.  ")],
    )
    _write(
        store,
        "b",
        [
            _turn("b", "t1", 0, "user", "I moved to Porto in May."),
            _turn("b", "t1", 1, "assistant", "Nice!"),
            _turn("b", "t2", 0, "user", "I moved to Porto in May."),  # session shared across questions
        ],
        [_session("b", "t1", None), _session("b", "t2", "")],
    )
    return _config(tmp_path), store


def test_collect_unit_texts_formats_dedups_and_adds_summaries(toy: tuple[Path, ResultStore]) -> None:
    cfg_path, store = toy
    texts = collect_unit_texts(store, load_config(cfg_path))
    assert texts.texts == [
        "Caroline: I moved to Porto in May.",
        "Melanie: How do you like Porto?",
        "Caroline moved to Porto.",
        "user: I moved to Porto in May.",
        "assistant: Nice!",
    ]
    assert (texts.units, texts.per_dataset) == (6, {"a": 3, "b": 3})


def test_collect_unit_texts_respects_index_roles(toy: tuple[Path, ResultStore], tmp_path: Path) -> None:
    _, store = toy
    texts = collect_unit_texts(store, load_config(_config(tmp_path, index_roles=["user"])))
    assert "Melanie: How do you like Porto?" not in texts.texts
    assert "Caroline: I moved to Porto in May." in texts.texts
    assert "assistant: Nice!" in texts.texts  # dataset b indexes every role


def test_missing_turns_table_names_dataset_and_file(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path / "results"))
    with pytest.raises(FileNotFoundError, match=r"dataset 'a'.*turns\.parquet"):
        collect_unit_texts(store, load_config(_config(tmp_path)))


def test_asset_embeds_once_then_nothing(toy: tuple[Path, ResultStore]) -> None:
    cfg_path, store = toy
    resources = build_resources(load_config(cfg_path))  # the definitions' own: benchmark, store, embeddings, ...
    asset = build_embeddings(load_config(cfg_path).config_name)
    node = asset.node_def.name
    first = dg.materialize([asset], resources=resources)
    meta = first.asset_materializations_for_node(node)[0].metadata
    assert meta["model"].value == "all-MiniLM-L6-v2|fp32|seq256"
    assert (meta["unique_texts"].value, meta["newly_embedded"].value, meta["already_cached"].value) == (5, 5, 0)
    cache = EmbeddingCache(embeddings_dir(store.root), meta["model"].value)
    assert len(cache) == 5
    second = dg.materialize([asset], resources=resources)  # nothing changed: not even the texts are read
    meta2 = second.asset_materializations_for_node(node)[0].metadata
    assert meta2["skipped_unchanged"].value is True
    assert (meta2["unit_texts"].value, meta2["unique_texts"].value) == (meta["unit_texts"].value, 5)
    # later stages of a run add shards (question vectors, reader spans): the unit texts are still there
    EmbeddingCache(embeddings_dir(store.root), meta["model"].value).put(["f" * 64], np.ones((1, 384), np.float32))
    again = dg.materialize([asset], resources=resources)
    assert again.asset_materializations_for_node(node)[0].metadata["skipped_unchanged"].value is True
    turns = store.canonical_path("a", "turns")  # a re-converted table (atomic rename: new mtime)
    os.utime(turns, ns=(turns.stat().st_atime_ns, turns.stat().st_mtime_ns + 1_000_000_000))
    third = dg.materialize([asset], resources=resources)
    meta3 = third.asset_materializations_for_node(node)[0].metadata
    assert "skipped_unchanged" not in meta3
    assert (meta3["newly_embedded"].value, meta3["already_cached"].value) == (0, 5)
    assert meta3["model_load_seconds"].value == 0  # a fully cached run never loads the model
    for shard in cache.directory.glob("*.parquet"):  # the cache cleared behind its back: embedded again
        shard.unlink()
    fourth = dg.materialize([asset], resources=resources)
    meta4 = fourth.asset_materializations_for_node(node)[0].metadata
    assert (meta4["newly_embedded"].value, meta4["already_cached"].value) == (5, 0)


def test_progress_reporter_logs_lines() -> None:
    lines: list[str] = []
    reporter = ProgressReporter(lines.append, every_s=0.0, bar=False)
    reporter(EmbedProgress(0, 10, 0.0, 100.0, 0.0))
    reporter(EmbedProgress(10, 10, 100.0, 100.0, 2.0))
    assert lines[-1] == "embeddings: 10/10 new texts (100.0%), 5.0 texts/s, ETA 0 s"


def _systems_config(tmp_path: Path, systems: list[dict], readers: list[dict]) -> Path:
    cfg = yaml.safe_load(_config(tmp_path).read_text())
    cfg |= {"memory_systems": systems, "readers": readers}
    path = tmp_path / "systems.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_datasets_whose_systems_read_no_vectors_are_not_embedded(tmp_path: Path) -> None:
    """flat_bm25 reads no unit vector: its dataset is embedded only for a reader that does, in a run that answers."""
    from assets.embeddings import embedded_datasets
    from pipeline.kinds.resolve import load_benchmark

    systems = [
        {"name": "bm25", "kind": "flat_bm25", "datasets": ["b"]},
        {"name": "rag", "kind": "rag", "datasets": ["a"]},
    ]
    offline = load_benchmark(str(_systems_config(tmp_path, systems, [{"name": "offline", "kind": "offline"}])))
    assert embedded_datasets(offline, answering=False) == ["a"]
    assert embedded_datasets(offline, answering=True) == ["a", "b"]  # the offline reader embeds retrieved turns


def test_asset_skips_datasets_nothing_reads(toy: tuple[Path, ResultStore], tmp_path: Path) -> None:
    cfg_path = _systems_config(tmp_path, [{"name": "bm25", "kind": "flat_bm25"}], [])
    cfg = load_config(cfg_path)
    asset = build_embeddings(cfg.config_name)
    result = dg.materialize([asset], resources=build_resources(cfg))
    meta = result.asset_materializations_for_node(asset.node_def.name)[0].metadata
    assert (meta["unique_texts"].value, meta["newly_embedded"].value) == (0, 0)
    assert meta["datasets_not_embedded"].value == "a, b"
