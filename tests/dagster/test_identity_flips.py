"""Flipping each config field on a real results folder recomputes exactly what the field feeds.

One baseline run (LongMemEval oracle sample: a vector memory, an LLM note-taking memory, the LLM
reader, an LLM judge and a rule judge, both endpoints on the fake OpenAI-compatible server), copied
once per flip; the real ``full_benchmark`` job runs on the copy with one field changed. Counted, not
timed: the questions each stage computed, the requests the endpoint received, the vectors embedded.
Every field of the schema is in FLIPS or names why it is not flipped here, and its class
(pipeline/config/identity.py) must agree with what the flip did.
"""

from __future__ import annotations

import copy
import logging
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow.parquet as pq
import pytest
import yaml

from assets.clients import StageClients
from assets.question_assets import STAGE_DEFS
from pipeline.config.identity import FIELDS, IDENTITY, NAMING, OPERATIONAL, REPORT, SELECTION, schema_paths
from pipeline.config.model import load_config
from pipeline.datasets.keys import config_keys
from pipeline.definitions import build_defs
from pipeline.embeddings.spec import resolve_backend
from pipeline.kinds.resolve import load_benchmark
from pipeline.llm.fake_server import FakeOpenAIServer, running_fake_server
from pipeline.store.results import ResultStore
from resources.factory import build_resources
from tests.support.dagster import LME_ORACLE_SAMPLE, stage_run_metadata
from tests.support.paths import PROJECT_ROOT

STAGES = ("ingestion", "retrievals", "answers", "judgments")
ALL = frozenset(STAGES)
READ = frozenset({"answers", "judgments"})
JUDGED = frozenset({"judgments"})
NOTHING: frozenset[str] = frozenset()
OTHER_BACKEND = "fp32" if resolve_backend("auto", "cpu") == "bf16" else "bf16"


def _endpoint(base_url: str, model: str) -> dict[str, Any]:
    return {"base_url": base_url, "model": model, "api_key_env": "MEMBENCH_TEST_KEY", "max_retries": 0}


def baseline(base_url: str, results: Path) -> dict[str, Any]:
    return {
        "results_dir": str(results),
        "datasets": [{"name": "lme", "loader": "longmemeval", "path": str(LME_ORACLE_SAMPLE), "limit": 3}],
        "memory_systems": [{"name": "rag", "kind": "rag", "params": {"top_k": 10}}, {"name": "notes", "kind": "notes"}],
        "readers": [{"name": "gpt", "kind": "llm"}],
        "judges": [
            {"name": "contains", "kind": "lme_contains_normalized"},
            {"name": "official", "kind": "lme_official_llm_judge"},
        ],
        "llm": _endpoint(base_url, "fake-model"),
        "judge_llm": _endpoint(base_url, "fake-judge"),
    }


@dataclass(frozen=True)
class Flip:
    """Set ``path`` (``llm.temperature``, ``readers[0].params``) to ``value``; expect ``recomputed``
    stages to compute questions and, with ``requests``, the endpoint to be asked (None: not counted)."""

    path: str
    value: Any
    recomputed: frozenset[str]
    requests: bool | None = None
    vectors: bool = False


IDENTITY_FLIPS = [
    Flip("datasets[].index_roles", ["user"], ALL, requests=True),
    Flip("embeddings.backend", OTHER_BACKEND, ALL, vectors=True),
    Flip("embeddings.max_seq_length", 128, ALL, vectors=True),
    Flip("memory_systems[].kind", "flat_bm25", ALL),  # ``[]``: the section's last entry (notes; the LLM judge)
    Flip("memory_systems[].params", {"top_k": 5}, ALL),
    Flip("memory_systems[].cutoffs", [2], frozenset({"retrievals", "answers", "judgments"})),  # a new unit notes@2
    Flip("readers[].kind", "offline", READ, vectors=True),  # the offline reader embeds sentence spans
    Flip("readers[].params", {"max_tokens": 64}, READ, requests=True),
    Flip("readers[].repeats", 2, READ, requests=True),
    Flip("judges[].kind", "lme_contains_normalized", JUDGED),
    Flip("judges[].params", {"model": "other-judge"}, JUDGED, requests=True),
    Flip("judges[].repeats", 2, JUDGED, requests=True),
    Flip("llm.model", "other-model", ALL, requests=True),
    Flip("llm.temperature", 0.7, ALL, requests=True),
    Flip("llm.max_tokens", 64, READ, requests=True),  # notes set their own reply cap
    Flip("llm.model_tag", "q4_k_m", ALL, requests=True),
    Flip("judge_llm.model", "other-judge", JUDGED, requests=True),
    Flip("judge_llm.model_tag", "q8", JUDGED, requests=True),
    # LongMemEval's judge fixes its temperature and reply cap: the block's values reach no call
    Flip("judge_llm.temperature", 0.7, NOTHING, requests=False),
    Flip("judge_llm.max_tokens", 64, NOTHING, requests=False),
]
QUIET_FLIPS = [
    Flip("datasets[].path", "<copy>", NOTHING, requests=False),
    Flip("datasets[].limit", 2, NOTHING, requests=False),
    Flip("datasets[].limit_per_type", 5, NOTHING, requests=False),
    Flip("datasets[].question_ids", "<first two>", NOTHING, requests=False),
    Flip("embeddings.batch_size", 4, NOTHING, requests=False),
    Flip("embeddings.device", "cpu:0", NOTHING, requests=False),
    Flip("embeddings.num_threads", 1, NOTHING, requests=False),
    Flip("embeddings.workers", 2, NOTHING, requests=False),
    *(
        Flip(f"{block}.{name}", value, NOTHING, requests=False)
        for block in ("llm", "judge_llm")
        for name, value in (
            ("base_url", "<second server>"),
            ("api_key_env", "MEMBENCH_OTHER_KEY"),
            ("timeout_s", 30.0),
            ("connect_timeout_s", 2.0),
            ("max_retries", 3),
            ("unreachable_retries", 1),
            ("probe_after_s", 5.0),
            ("max_concurrency", 2),
            ("requests_per_minute", 6000.0),
            ("tokens_per_minute", 10_000_000.0),
            ("stop_after_unreachable", 3),
        )
    ),
    Flip("retrieval_k", [1, 5], NOTHING, requests=False),
    Flip("prices_path", "<copy>", NOTHING, requests=False),
    Flip("name", "renamed", NOTHING, requests=False),
    Flip("memory_systems[].datasets", ["lme"], NOTHING, requests=False),
    Flip("readers[].datasets", ["lme"], NOTHING, requests=False),
    Flip("judges[].datasets", ["lme"], NOTHING, requests=False),
]
# renamed entries are new units: computed again, every LLM reply from the cache
RENAMES = [
    Flip("memory_systems[].name", "notes2", ALL, requests=False),
    Flip("readers[].name", "gpt2", READ, requests=False),
    Flip("judges[].name", "official2", JUDGED, requests=False),
    Flip("datasets[].name", "lme2", ALL, requests=False),
]
NOT_FLIPPED = {
    "datasets[].loader": "one loader reads this format; tests/datasets cover each loader's records",
    "embeddings.model": "one model is bundled offline; backend and max_seq_length flip the same recorded variant",
    "memory_systems[].repeats": "must stay 1 for memory systems (a config error otherwise)",
    "readers[].cutoffs": "must stay empty for readers (a config error otherwise)",
    "judges[].cutoffs": "must stay empty for judges (a config error otherwise)",
    "results_dir": "another folder is another, empty store: everything is computed there",
    "source": "set by the loader from the file name, not written in a config",
}


def _set(raw: dict[str, Any], path: str, value: Any) -> None:
    """Set ``path`` in the raw config; ``section[]`` means its last entry (the LLM one for memory)."""
    *parents, leaf = path.split(".")
    node: Any = raw
    for part in parents:
        node = node[part[:-2]][-1] if part.endswith("[]") else node.setdefault(part, {})
    if leaf.endswith("[]"):
        leaf = leaf[:-2]
    node[leaf] = value


def _vectors(results: Path) -> int:
    return sum(pq.read_metadata(p).num_rows for p in (results / "parquet" / "embeddings").rglob("*.parquet"))


class _Context:
    """What the stage runners use of a Dagster context (its log)."""

    log = logging.getLogger("membench.identity_flips")


def _run_stages(config: Path) -> dict[str, int]:
    """The four per-question stages through the runners their assets call (assets/question_assets.py),
    without Dagster's own steps: the same code path, the same results folder, a fraction of the time."""
    cfg = load_config(str(config))
    store = ResultStore(results_dir=str(cfg.resolved_results_dir()))
    keys = [k for ds in config_keys(cfg, store.parquet_root) for k in ds.keys]
    bound = build_resources(cfg)
    clients = StageClients(bound["embeddings"], bound["llm"], bound["judge_llm"])
    computed = {}
    try:
        for sd in STAGE_DEFS:
            outcome, _ = sd.runner(_Context(), load_benchmark(str(config)), store, keys, clients)
            assert not outcome.failed, f"{sd.name}: {outcome.failed}"
            computed[sd.name] = outcome.keys_computed
            store.refresh_catalog()
    finally:
        for name in ("llm", "judge_llm"):
            client = bound[name].client()
            if client is not None:
                client.close()
    return computed


def _run(raw: dict[str, Any], folder: Path, job_name: str = "full_benchmark") -> dict[str, int]:
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump(raw))
    load_config.cache_clear()
    if job_name == "question_stages":
        return _run_stages(config)
    job = build_defs(str(config)).resolve_job_def(job_name)
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(instance=instance, raise_on_error=False)
    assert result.success, f"the run failed: {[e.message for e in result.all_events if e.is_failure][:3]}"
    return {s: int(stage_run_metadata(result, s)["computed"]) for s in STAGES}


@dataclass
class Baseline:
    raw: dict[str, Any]
    results: Path
    server: FakeOpenAIServer
    second: FakeOpenAIServer


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Baseline]:
    root = tmp_path_factory.mktemp("identity")
    with running_fake_server() as server, running_fake_server() as second:
        raw = baseline(server.base_url, root / "base")
        computed = _run(raw, root)
        assert all(computed[s] > 0 for s in STAGES) and server.request_count > 0
        yield Baseline(raw, root / "base", server, second)


def _flipped(raw: dict[str, Any], base: Baseline, flip: Flip, folder: Path) -> dict[str, Any]:
    raw = copy.deepcopy(raw)
    raw["results_dir"] = str(folder)
    value = flip.value
    if value == "<copy>":
        source = LME_ORACLE_SAMPLE if flip.path.startswith("datasets") else PROJECT_ROOT / "configs" / "prices.yaml"
        value = str(shutil.copy(source, folder.parent / f"copy-{source.name}"))
    elif value == "<second server>":
        value = base.second.base_url
    elif value == "<first two>":
        value = _question_ids(base.results)[:2]
    _set(raw, flip.path, value)
    return raw


def _question_ids(results: Path) -> list[str]:
    table = pq.read_table(next((results / "parquet" / "canonical" / "lme").glob("questions*.parquet")))
    return sorted(table.column("question_id").to_pylist())[:3]


def _check(base: Baseline, flips: list[Flip], tmp_path: Path, job: str) -> None:
    """Apply ``flips`` together to a copy of the baseline folder, run ``job``; expect the union of
    their recomputed stages, requests when any expects them, vectors when any expects them."""
    folder = tmp_path / "flipped"
    shutil.copytree(base.results, folder)
    raw = copy.deepcopy(base.raw)
    for flip in flips:
        raw = _flipped(raw, base, flip, folder)
    requests_before = base.server.request_count + base.second.request_count
    vectors_before = _vectors(folder)
    computed = _run(raw, tmp_path, job)
    label = ", ".join(f.path for f in flips)
    assert {s for s in STAGES if computed[s] > 0} == set().union(*(f.recomputed for f in flips)), f"{label}: {computed}"
    asked = base.server.request_count + base.second.request_count - requests_before
    wanted = [f.requests for f in flips if f.requests is not None]
    if wanted:
        assert (asked > 0) is any(wanted), f"{label}: {asked} requests"
    assert (_vectors(folder) > vectors_before) is any(f.vectors for f in flips), f"{label}: vectors"


@pytest.mark.parametrize("flip", IDENTITY_FLIPS, ids=lambda f: f.path)
def test_an_identity_field_recomputes_what_it_feeds(base: Baseline, flip: Flip, tmp_path: Path) -> None:
    assert FIELDS[flip.path].cls == IDENTITY
    _check(base, [flip], tmp_path, "question_stages")  # the stage runners alone: see _run_stages


def test_operational_selection_and_report_fields_recompute_nothing(base: Baseline, tmp_path: Path) -> None:
    """Every such field flipped at once, the whole job run: no question computed, no request, no vector."""
    assert {FIELDS[f.path].cls for f in QUIET_FLIPS} <= {OPERATIONAL, SELECTION, REPORT, NAMING}
    _check(base, QUIET_FLIPS, tmp_path, "full_benchmark")


def test_renamed_entries_are_computed_from_the_cache(base: Baseline, tmp_path: Path) -> None:
    """Renamed memory systems, readers, judges and datasets are new units: computed, but with no request."""
    assert {FIELDS[f.path].cls for f in RENAMES} == {NAMING}
    _check(base, RENAMES, tmp_path, "full_benchmark")


def test_every_field_is_flipped_or_says_why_not() -> None:
    flipped = {f.path for f in (*IDENTITY_FLIPS, *QUIET_FLIPS, *RENAMES)}
    assert set(schema_paths()) == flipped | set(NOT_FLIPPED)
    assert not flipped & set(NOT_FLIPPED)
