"""The run manifest: what a results folder was computed from, so that its numbers can be checked.

Why: a number is only worth putting beside a paper's when one can tell which data, code, models,
prompts and metric definitions produced it, and whether it means what it seems to (a "retrieval"
system whose top_k covers the whole haystack is full context; a 20-question slice is not the
benchmark; failed questions are not in the denominator). ``results/<config>/manifest.json`` holds
all of it, ``membench verify`` (pipeline/provenance/verify.py) recomputes it from the stored files, and two
tables under ``parquet/manifest/`` make the dataset rows and the integrity flags queryable (views
``run_manifest`` and ``integrity_flags``) and readable by the report, which shows each flag beside
the number it qualifies.

Written by the ``benchmark_report`` asset before the report is built. Hashes of unchanged files
(same size and mtime as recorded) are taken from the previous manifest: files are only replaced by
atomic rename, so rewriting the manifest of a rerun costs no re-hashing; ``verify`` never trusts that.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from pipeline.catalog.manifest import (
    DATASET_SCHEMA,
    FLAG_FAILED,
    FLAG_FULL_HAYSTACK,
    FLAG_ISOLATION_LEAK,
    FLAG_SCHEMA,
    FLAG_SLICED,
    MANIFEST_DIR,
    MANIFEST_JSON,
)
from pipeline.config.model import PROJECT_ROOT, BenchmarkConfig
from pipeline.config.printed_commands import RUN_ALL
from pipeline.config.specs import Benchmark, ComponentSpec
from pipeline.datasets.base import DatasetFileError
from pipeline.datasets.loaders import SOURCE_FILES, source_files
from pipeline.judges.base import DEFAULT_JUDGES, JudgeSpec, judge_model
from pipeline.provenance.identity import indexed_units, manifest_identity
from pipeline.provenance.libraries import library_versions
from pipeline.provenance.releases import file_sha256, match_release, records_sha256
from pipeline.readers.presets import presets_fingerprint
from pipeline.readers.prompts import prompts_fingerprint
from pipeline.report.glossary import REPORT_DEFINITIONS, judge_metric_definitions
from pipeline.store.results import ResultStore, write_parquet_atomic
from pipeline.util.fingerprint import parquet_files, pipeline_code_files, update_with_files

MANIFEST_VERSION = 1
ROW_STAGES = ("retrievals", "answers", "judgments")  # the stored rows the numbers are computed from
MANIFEST_INPUTS = ".manifest_inputs"  # under the results folder: fingerprint of what manifest.json was built from
UNHASHED_DIRS = frozenset({MANIFEST_DIR, "_index", "embeddings"})  # parquet/ folders the manifest does not read
HEADLINE_KEY = ("dataset", "system", "reader", "judge", "metric")
HEADLINE_FIELDS = ("headline_value", "n_scored", "n_correct", "n_failed_answer", "n_failed_judgment", "n_judgments")


class ManifestError(ValueError):
    """manifest.json is missing or unreadable (the message names the file)."""


# ---- code, config, models, fingerprints -------------------------------------------------------
def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), *args], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def code_version() -> dict[str, Any]:
    """Package version, git commit (None outside a checkout), uncommitted changes, pipeline code hash."""
    try:
        version: str | None = importlib.metadata.version("membench")
    except importlib.metadata.PackageNotFoundError:
        version = None
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    h = hashlib.sha256()
    for f in pipeline_code_files():
        h.update(f.relative_to(PROJECT_ROOT).as_posix().encode() + b"\0" + f.read_bytes())
    return {
        "package_version": version,
        "git_commit": commit,
        "git_dirty": bool(status) if status is not None else None,
        "pipeline_sha256": h.hexdigest(),
    }


def _component(spec: ComponentSpec[Any]) -> dict[str, Any]:
    return {"name": spec.name, "kind": spec.kind, "params": spec.params_json(), "datasets": spec.config.datasets}


def resolved_config(bench: Benchmark[Any, Any, Any]) -> dict[str, Any]:
    """The config as run: every component with its params, code defaults filled in."""
    cfg = bench.config
    out = cfg.model_dump(mode="json", exclude={"memory_systems", "readers", "judges"})
    out["memory_systems"] = [_component(s) for s in bench.memory_systems]
    out["readers"] = [_component(s) for s in bench.readers]
    out["judges"] = [_component(s) for s in bench.judges] or "the default judges of each dataset family"
    for block in ("llm", "judge_llm"):
        if out.get(block):
            out[block].pop("api_key_env", None)  # the variable's name only, but nothing about keys belongs here
    return out


def _judge_specs(bench: Benchmark[Any, Any, Any]) -> list[ComponentSpec[JudgeSpec]]:
    if bench.judges:
        return list(bench.judges)
    names = {n for groups in DEFAULT_JUDGES.values() for group in groups for n in group}
    return [s for n, s in sorted(bench.default_judges.items()) if n in names]


def models(bench: Benchmark[Any, Any, Any]) -> dict[str, Any]:
    """Model ids: embedder, each reader's and judge's LLM, model-like params of memory systems."""
    cfg = bench.config
    llm = cfg.llm.model if cfg.llm else None
    judge_endpoint = cfg.judge_endpoint()
    judge_llm = judge_endpoint.model if judge_endpoint else None
    readers = {
        s.name: (s.params_json().get("model") or llm) if getattr(s.impl, "uses_llm", False) else None
        for s in bench.readers
    }
    judges: dict[str, str | None] = {}
    for s in _judge_specs(bench):
        if not s.impl.needs_llm:
            judges[s.name] = None  # rule-based
        elif judge_endpoint is not None:
            judges[s.name] = judge_model(s.params_given(), judge_llm)
        else:
            judges[s.name] = "not run: no LLM configured"
    systems = {
        s.name: {k: v for k, v in s.params_json().items() if "model" in k and v is not None}
        | ({"llm": llm} if getattr(s.impl, "uses_llm", False) else {})
        for s in bench.memory_systems
    }
    return {
        "embedder": cfg.embeddings.model,
        "llm": llm,
        "judge_llm": judge_llm,
        "readers": readers,
        "judges": judges,
        "memory_systems": {k: v for k, v in systems.items() if v},
    }


def fingerprints(bench: Benchmark[Any, Any, Any]) -> dict[str, Any]:
    """Prompt and metric fingerprints: a changed prompt or metric definition changes these."""
    definitions = {**REPORT_DEFINITIONS, **judge_metric_definitions()}
    return {
        "reader_prompts": prompts_fingerprint(),
        "reader_presets": presets_fingerprint(),
        "judges": {
            s.name: {"metric": s.impl.metric, "version": s.impl.version, "fingerprint": s.impl.fingerprint}
            for s in _judge_specs(bench)
        },
        "metric_definitions": hashlib.sha256(json.dumps(definitions, sort_keys=True).encode()).hexdigest()[:16],
    }


# ---- dataset files -----------------------------------------------------------------------------
_HASH_KEYS = ("file_bytes", "mtime_ns", "sha256", "records_sha256", "n_records", "n_questions_file", "release",
              "release_source", "release_match")  # fmt: skip


def hash_dataset_file(path: Path) -> dict[str, Any]:
    """sha256 of the bytes and of the records, and the release they match (pipeline/provenance/releases.py).

    A file that cannot be read or parsed gets NULL hashes and its error (the report must still be
    written: the run's numbers exist whatever happened to the file since)."""
    out: dict[str, Any] = dict.fromkeys((*_HASH_KEYS, "error"))
    try:
        st = path.stat()
        out.update(file_bytes=st.st_size, mtime_ns=st.st_mtime_ns, sha256=file_sha256(path))
        records = records_sha256(path)
    except (OSError, DatasetFileError) as exc:
        return {**out, "error": str(exc)}
    release, how = match_release(out["sha256"], records.sha256)
    out.update(records_sha256=records.sha256, n_records=records.n_records, n_questions_file=records.n_questions)
    if release is not None:
        out.update(release=release.name, release_source=release.source, release_match=how)
    return out


def hash_dataset_files(loader: str, path: Path) -> dict[str, Any]:
    """A dataset read from several files (BEAM's folder, LoCoMo-Plus's two files): sha256 over each
    file's path (relative to ``path``'s folder) and sha256, in path order; no records hash or release."""
    out: dict[str, Any] = dict.fromkeys((*_HASH_KEYS, "error"))
    try:
        files = source_files(loader, path)
        base = path if path.is_dir() else path.parent
        h = hashlib.sha256()
        for f in files:
            h.update(f"{os.path.relpath(f, base.parent)}\x00{file_sha256(f)}\n".encode())
        stats = [f.stat() for f in files]
    except (OSError, DatasetFileError) as exc:
        return {**out, "error": str(exc)}
    return {**out, "sha256": h.hexdigest(), "file_bytes": sum(st.st_size for st in stats),
            "mtime_ns": max((st.st_mtime_ns for st in stats), default=None), "n_files": len(files)}  # fmt: skip


def dataset_entries(cfg: BenchmarkConfig, loaded: Mapping[str, int], previous: Mapping[str, Any] | None) -> list[dict]:
    """One entry per dataset of the config: its file's hashes, release, slice and loaded questions."""
    out = []
    old = {d.get("resolved_path"): d for d in (previous or {}).get("datasets", [])}
    for ds in cfg.datasets:
        path = ds.resolved_path(cfg.base_dir)
        prev = old.get(str(path))
        st = path.stat() if path.is_file() else None
        same = prev and st and prev.get("file_bytes") == st.st_size and prev.get("mtime_ns") == st.st_mtime_ns
        if ds.loader in SOURCE_FILES:  # several files: hashed together, every time (a folder has no one mtime)
            hashed = hash_dataset_files(ds.loader, path)
        else:
            hashed = {k: prev.get(k) for k in (*_HASH_KEYS, "error")} if same and prev else hash_dataset_file(path)
        n_loaded = loaded.get(ds.name, 0)
        sliced = ds.limit is not None or ds.limit_per_type is not None or ds.question_ids is not None
        out.append(
            {
                "dataset": ds.name,
                "loader": ds.loader,
                "path": ds.path,
                "resolved_path": str(path),
                **hashed,
                "limit": ds.limit,
                "limit_per_type": ds.limit_per_type,
                "question_ids": list(ds.question_ids) if ds.question_ids else None,
                "n_questions_loaded": n_loaded,
                "sliced": sliced,
            }
        )
    return out


# ---- stored rows -------------------------------------------------------------------------------
def stored_row_hashes(store: ResultStore, previous: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """stage -> {file name: {sha256, bytes, mtime_ns}} of every Parquet file of the row stages."""
    out: dict[str, dict[str, Any]] = {}
    for stage in ROW_STAGES:
        old = ((previous or {}).get("stored_rows") or {}).get(stage) or {}
        files: dict[str, Any] = {}
        for f in sorted((store.parquet_root / stage).glob("*.parquet")):
            st = f.stat()
            prev = old.get(f.name)
            if prev and prev.get("bytes") == st.st_size and prev.get("mtime_ns") == st.st_mtime_ns:
                files[f.name] = prev
            else:
                files[f.name] = {"sha256": file_sha256(f), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns}
        out[stage] = files
    return out


# ---- numbers and flags from the views ----------------------------------------------------------
def _views(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}


def headline_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The accuracy_report rows the manifest records (key + HEADLINE_FIELDS), in a stable order."""
    if "accuracy_report" not in _views(con):
        return []
    cols = ", ".join((*HEADLINE_KEY, *HEADLINE_FIELDS))
    rel = con.sql(f"SELECT {cols} FROM accuracy_report ORDER BY {', '.join(HEADLINE_KEY)}")
    return [{k: _plain(v) for k, v in r.items()} for r in rel.to_arrow_table().to_pylist()]


def _plain(value: Any) -> Any:
    """Floats rounded to 12 places: DuckDB's parallel sums differ in the last bits from run to run."""
    if isinstance(value, int | bool | str) or value is None:
        return value
    return round(float(value), 12)


def loaded_questions(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    if "questions" not in _views(con):
        return {}
    return dict(con.execute("SELECT dataset, count(*) FROM questions GROUP BY dataset").fetchall())


# a question's retrieval "ranked the whole haystack": every session of its haystack, and every
# indexed turn of it when the units carry turn ids (the roles a dataset indexes: ``index_roles``)
_FULL_HAYSTACK_SQL = """
WITH hs AS (
  SELECT h.haystack_id, count(DISTINCT h.session_key) AS n_sessions,
         count(DISTINCT t.turn_id) FILTER (WHERE {role_filter}) AS n_turns
  FROM haystacks h LEFT JOIN turns t ON t.dataset = h.dataset AND t.session_key = h.session_key
  WHERE h.dataset = $dataset GROUP BY h.haystack_id
), r AS (
  SELECT r.unit AS system, r.partition_key,
         len(list_distinct(list_transform(r.units, lambda u: u.session_key))) AS ranked_sessions,
         len(list_distinct(flatten(list_transform(r.units, lambda u: coalesce(u.turn_ids, []))))) AS ranked_turns
  FROM retrievals r WHERE r.dataset = $dataset AND r.status = 'ok'
)
SELECT r.system, count(*) AS n_ok,
       count(*) FILTER (WHERE hs.n_sessions > 0 AND r.ranked_sessions >= hs.n_sessions
                        AND (r.ranked_turns = 0 OR r.ranked_turns >= hs.n_turns)) AS n_full
FROM r JOIN questions q ON q.dataset = $dataset AND q.partition_key = r.partition_key
JOIN hs ON hs.haystack_id = q.haystack_id
GROUP BY r.system ORDER BY r.system
"""


def full_haystack_counts(con: duckdb.DuckDBPyConnection, dataset: str, roles: Sequence[str] | None) -> list[tuple]:
    """(system, ok retrievals, retrievals that ranked the whole haystack) of one dataset."""
    if not {"retrievals", "questions", "haystacks", "turns"} <= _views(con):
        return []
    role_filter = "true" if roles is None else "t.role IN (SELECT unnest($roles))"
    params: dict[str, Any] = {"dataset": dataset} | ({} if roles is None else {"roles": list(roles)})
    return con.execute(_FULL_HAYSTACK_SQL.format(role_filter=role_filter), params).fetchall()


def failed_counts(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, int]]:
    """dataset -> (questions with a failed stage, questions)."""
    if "progress" not in _views(con):
        return {}
    rows = con.execute(
        "SELECT dataset, count(DISTINCT partition_key) FILTER (WHERE status = 'failed'), "
        "count(DISTINCT partition_key) FROM progress GROUP BY dataset"
    ).fetchall()
    return {d: (int(f), int(n)) for d, f, n in rows}


def leaked_systems(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, str]]:
    """system -> (canary, checked_at) of every system whose last ``membench check-isolation`` leaked."""
    if "isolation_checks" not in _views(con):
        return {}
    rows = con.execute("SELECT system, canary, checked_at FROM isolation_checks WHERE leaked").fetchall()
    return {s: (c, t) for s, c, t in rows}


def integrity_flags(
    con: duckdb.DuckDBPyConnection, cfg: BenchmarkConfig, datasets: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Every flag that qualifies a number of this run (an empty list: nothing to qualify)."""
    flags: list[dict[str, Any]] = []
    failed = failed_counts(con)
    leaked = leaked_systems(con)
    for entry in datasets:
        name = entry["dataset"]
        if entry["sliced"]:
            of = entry.get("n_questions_file")
            rule = ", ".join(f"{k}: {entry[k]}" for k in ("limit", "limit_per_type") if entry.get(k) is not None)
            if entry.get("question_ids"):
                rule = ", ".join(filter(None, (rule, f"question_ids: {len(entry['question_ids'])} named")))
            flags.append(
                _flag(
                    name,
                    None,
                    FLAG_SLICED,
                    entry["n_questions_loaded"],
                    of,
                    f"sliced: {entry['n_questions_loaded']} of {of if of is not None else '?'} questions ({rule})",
                )
            )
        n_failed, n_all = failed.get(name, (0, 0))
        if n_failed:
            flags.append(
                _flag(
                    name,
                    None,
                    FLAG_FAILED,
                    n_failed,
                    n_all,
                    f"failed questions: {n_failed} of {n_all} (not scored; retried by the next run)",
                )
            )
        for system in (s.name for s in cfg.memory_systems if s.applies_to(name) and s.name in leaked):
            canary, when = leaked[system]
            message = (
                f"isolation leak: another haystack's canary {canary} came back in this system's retrieval "
                f"(membench check-isolation, {when}); its numbers may use other conversations' memories"
            )
            flags.append(_flag(name, system, FLAG_ISOLATION_LEAK, 1, 1, message))
        roles = cfg.dataset(name).index_roles
        for system, n_ok, n_full in full_haystack_counts(con, name, roles):
            if n_full:
                flags.append(
                    _flag(
                        name,
                        system,
                        FLAG_FULL_HAYSTACK,
                        n_full,
                        n_ok,
                        f"top_k ≥ haystack on {n_full} of {n_ok} questions: retrieval equals full context there",
                    )
                )
    return flags


def _flag(dataset: str, system: str | None, flag: str, n: int, of: int | None, message: str) -> dict[str, Any]:
    return {"dataset": dataset, "system": system, "flag": flag, "n_affected": n, "n_of": of, "message": message}


# ---- the manifest ------------------------------------------------------------------------------
def manifest_path(store: ResultStore) -> Path:
    return store.root / MANIFEST_JSON


def read_manifest(path: Path) -> dict[str, Any]:
    """manifest.json as a dict; ManifestError naming the file when it is missing or not a manifest."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ManifestError(
            f"no manifest: {path} does not exist (the benchmark_report step writes it: {RUN_ALL})"
        ) from None
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path}: not a readable manifest ({exc})") from None
    if not isinstance(data, dict) or data.get("manifest_version") != MANIFEST_VERSION:
        raise ManifestError(f"{path}: manifest_version is not {MANIFEST_VERSION}")
    return data


def build_manifest(
    bench: Benchmark[Any, Any, Any], store: ResultStore, con: duckdb.DuckDBPyConnection
) -> dict[str, Any]:
    """Everything the manifest records, from the config, the files and the views of ``con``."""
    try:
        previous: dict[str, Any] | None = read_manifest(manifest_path(store))
    except ManifestError:
        previous = None
    cfg = bench.config
    datasets = dataset_entries(cfg, loaded_questions(con), previous)
    config_file = Path(cfg.source) if cfg.source else None
    return {
        "manifest_version": MANIFEST_VERSION,
        "generated_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "results_dir": str(store.root),
        "config": {
            "name": cfg.config_name,
            "source": cfg.source,
            "sha256": file_sha256(config_file) if config_file and config_file.is_file() else None,
            "resolved": resolved_config(bench),
        },
        "code": code_version(),
        "libraries": library_versions(server_venvs(bench)),
        "models": models(bench),
        "fingerprints": fingerprints(bench),
        "datasets": datasets,
        "flags": integrity_flags(con, cfg, datasets),
        "headline": headline_rows(con),
        "stored_rows": stored_row_hashes(store, previous),
        "identity": manifest_identity(bench, indexed_units(store.parquet_root), previous),
    }


def _same_content(a: Mapping[str, Any], b: Mapping[str, Any] | None) -> bool:
    """Equal but for the time of writing (compared as JSON: tuples and lists alike)."""
    if b is None:
        return False
    a = json.loads(json.dumps(a, ensure_ascii=False))
    return {k: v for k, v in a.items() if k != "generated_at"} == {k: v for k, v in b.items() if k != "generated_at"}


def server_venvs(bench: Benchmark[Any, Any, Any]) -> list[Path]:
    """The server virtualenvs of the configured memory systems that run one (Hindsight's)."""
    return [Path(v) for s in bench.memory_systems if (v := getattr(s.params, "venv", None)) is not None]


def inputs_fingerprint(bench: Benchmark[Any, Any, Any], store: ResultStore) -> str:
    """Hash of what the manifest is computed from: the resolved config, the git commit, the installed
    library versions, and the config file, dataset files, pipeline code and result files by (path,
    size, mtime)."""
    cfg = bench.config
    h = hashlib.sha256(json.dumps(resolved_config(bench), sort_keys=True, default=str).encode())
    h.update(f"|{_git('rev-parse', 'HEAD')}".encode())
    h.update(json.dumps(library_versions(server_venvs(bench)), sort_keys=True).encode())
    files = pipeline_code_files() + parquet_files(store.parquet_root, UNHASHED_DIRS)
    named = [Path(cfg.source)] if cfg.source else []
    named += [ds.resolved_path(cfg.base_dir) for ds in cfg.datasets]
    h.update(json.dumps([str(p) for p in named if not p.is_file()]).encode())  # a missing file counts too
    update_with_files(h, files + [p for p in named if p.is_file()])
    return h.hexdigest()


def write_manifest(bench: Benchmark[Any, Any, Any], store: ResultStore) -> tuple[Path, bool]:
    """(manifest.json, whether it was rewritten).

    Why two shortcuts: on the full shared benchmark the flag and headline queries take seconds,
    and every run ends with this step. Inputs unchanged since the last manifest (``.manifest_inputs``,
    see ``inputs_fingerprint``): nothing is queried. Content unchanged: nothing is rewritten, so
    the catalog and the report, which read the manifest tables, are not rebuilt either."""
    fingerprint = manifest_to_write(bench, store)
    if fingerprint is None:
        return manifest_path(store), False
    with store.reader() as con:
        return write_manifest_from(bench, store, con, fingerprint)


def manifest_to_write(bench: Benchmark[Any, Any, Any], store: ResultStore) -> str | None:
    """The inputs' fingerprint when the manifest must be computed again, None when it is current
    (``write_manifest``'s first shortcut: taken before any query, so a later write counts as a change)."""
    path, mark = manifest_path(store), store.root / MANIFEST_INPUTS
    fingerprint = inputs_fingerprint(bench, store)
    tables = store.parquet_root / MANIFEST_DIR
    if path.exists() and tables.is_dir() and mark.exists() and mark.read_text().strip() == fingerprint:
        return None
    return fingerprint


def write_manifest_from(
    bench: Benchmark[Any, Any, Any], store: ResultStore, con: duckdb.DuckDBPyConnection, fingerprint: str
) -> tuple[Path, bool]:
    """``write_manifest`` past its first shortcut, its numbers from the views of ``con``, which must
    read every file ``fingerprint`` (``manifest_to_write``) was taken over, as they were then or later."""
    path, mark = manifest_path(store), store.root / MANIFEST_INPUTS
    tables = store.parquet_root / MANIFEST_DIR
    mark.unlink(missing_ok=True)
    manifest = build_manifest(bench, store, con)
    try:
        previous: dict[str, Any] | None = read_manifest(path)
    except ManifestError:
        previous = None
    changed = not (_same_content(manifest, previous) and tables.is_dir())
    if changed:
        write_tables(store, manifest)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(manifest, indent=1, ensure_ascii=False, allow_nan=False))
        tmp.replace(path)
    mark.write_text(fingerprint)
    return path, changed


def write_tables(store: ResultStore, manifest: Mapping[str, Any]) -> None:
    """parquet/manifest/run_manifest.parquet and integrity_flags.parquet (views of the same names)."""
    code = manifest["code"]
    rows = [
        {
            **{k: d.get(k) for k in DATASET_SCHEMA.names},
            "config": manifest["config"]["name"],
            "generated_at": manifest["generated_at"],
            "package_version": code["package_version"],
            "git_commit": code["git_commit"],
        }
        for d in manifest["datasets"]
    ]
    folder = store.parquet_root / MANIFEST_DIR
    folder.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(folder / "run_manifest.parquet", pa.Table.from_pylist(rows, schema=DATASET_SCHEMA))
    flags = pa.Table.from_pylist(list(manifest["flags"]), schema=FLAG_SCHEMA)
    write_parquet_atomic(folder / "integrity_flags.parquet", flags)
