"""The benchmark configuration: which datasets, memory systems, readers and judges a run covers.

Why YAML + pydantic: a run is declared, not coded; switching from the bundled samples to the real
datasets is ``MEMBENCH_CONFIG=configs/shared.yaml``, never a code edit. Unknown keys are errors so that a
typo in a config cannot silently fall back to a default.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipeline.config.errors import describe as describe_validation
from pipeline.config.project import DEFAULT_CONFIG_NAME, INSTALL_ROOT, config_base, default_config, resolve_path

# membench's own root: the clone, or site-packages when installed (a project's root: pipeline/config/project.py)
PROJECT_ROOT = INSTALL_ROOT
DEFAULT_CONFIG = INSTALL_ROOT / DEFAULT_CONFIG_NAME  # the sample config membench ships
CONFIG_ENV = "MEMBENCH_CONFIG"
EmbeddingBackend = Literal["auto", "fp32", "bf16", "int8"]  # what each trades: pipeline/embeddings/model.py


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetConfig(_Strict):
    """One dataset of the run: ``name`` prefixes its partition keys; ``loader`` is registered."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    loader: str
    path: str
    limit: int | None = None  # first N questions (for slices)
    # at most N questions of each question type (a stratified slice; with ``limit``, both apply)
    limit_per_type: int | None = Field(default=None, ge=1)
    # only these questions (the dataset's own ids); with limit / limit_per_type, all apply
    question_ids: tuple[str, ...] | None = Field(default=None, min_length=1)
    index_roles: tuple[str, ...] | None = None  # roles whose turns memories index; None = all

    def resolved_path(self, base: Path) -> Path:
        """The file: ``$VARS`` expanded, ``membench:...`` a bundled file, a relative path against ``base``."""
        return resolve_path(self.path, base)


class ComponentConfig(_Strict):
    """A named instance of a registered component (memory system, reader or judge)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    kind: str
    params: dict[str, Any] = Field(default_factory=dict)
    datasets: tuple[str, ...] | None = None  # only these datasets (None = every dataset of the run)
    # readers and judges: answer (judge) every question this many times (unit ...~<r> for r >= 2)
    repeats: int = Field(default=1, ge=1)
    # memory systems: also read and judge the first c ranked units of the one retrieval, for each c
    # (units <system>@<c>, pipeline/memory/cutoffs.py)
    cutoffs: tuple[int, ...] = ()

    def applies_to(self, dataset: str) -> bool:
        return self.datasets is None or dataset in self.datasets


class EmbeddingConfig(_Strict):
    """Embedding model settings (see pipeline/embeddings/model.py for what each backend trades)."""

    model: str = "all-MiniLM-L6-v2"
    # 32: measured on 2 cores (bf16, all-MiniLM-L6-v2), 2,048 LongMemEval_S turns of ~4.4k chars:
    # 64 -> 25.7 s and +650 MB of activations, 32 -> 23.4 s +430 MB, 16 -> 22.8 s +280 MB; 4,096
    # texts of ~150 chars: 8.6 / 8.4 / 10.1 s. Vectors: a text's padding depends on its batch, so
    # some move in the last bits (4,096 turns of ~350 chars: 61% bit-identical to batch 64, cosine
    # >= 0.99998); the cache key is the text, so vectors already cached are kept as they are.
    batch_size: int = 32
    max_seq_length: int | None = None  # None = the model's own limit; longer texts are truncated
    device: str = "cpu"
    backend: EmbeddingBackend = "auto"  # auto = bf16 on native-bf16 hardware
    num_threads: int | None = None  # torch threads in total; None = CPUs available to the process
    workers: int = 1  # >1: embed bulk jobs in that many processes, num_threads split between them


class LLMConfig(_Strict):
    """An OpenAI-compatible endpoint; the key is read from ``api_key_env`` at run time only."""

    base_url: str
    model: str
    # what the model name alone does not say (a quantization, a build): in every cache key and unit hash
    model_tag: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int = 512
    timeout_s: float = 60.0
    connect_timeout_s: float = Field(default=5.0, gt=0)  # a black-holed endpoint fails here, not after timeout_s
    max_retries: int = 5
    # retries of a connection error / timeout while the endpoint has not answered since (429/5xx: max_retries)
    unreachable_retries: int = Field(default=2, ge=0)
    # no reply this long: probe the endpoint (GET /models, within connect_timeout_s); no answer = it hangs
    # (pipeline/llm/hang.py); null: wait for timeout_s (a server that answers nothing while it generates)
    probe_after_s: float | None = Field(default=10.0, gt=0)
    max_concurrency: int = 4
    requests_per_minute: float | None = Field(default=None, gt=0)  # provider quota; None = no limit
    tokens_per_minute: float | None = Field(default=None, gt=0)  # provider quota; None = no limit
    # a stage stops after this many consecutive questions could not reach the endpoint (0 = never)
    stop_after_unreachable: int = Field(default=5, ge=0)


class BenchmarkConfig(_Strict):
    # Scopes Dagster state: asset keys are prefixed with it (default: the config file's stem).
    name: str = Field(default="", pattern=r"^[A-Za-z0-9_]*$")
    results_dir: str = "results/sample"
    datasets: tuple[DatasetConfig, ...]
    embeddings: EmbeddingConfig = EmbeddingConfig()
    memory_systems: tuple[ComponentConfig, ...] = ()
    readers: tuple[ComponentConfig, ...] = ()
    judges: tuple[ComponentConfig, ...] = ()
    llm: LLMConfig | None = None
    # the judges' own endpoint (base_url, model, api_key_env, ...); None = judges use ``llm``
    judge_llm: LLMConfig | None = None
    # retrieval cut-offs k of recall_any/recall_all/ndcg_any/evidence_recall@k
    retrieval_k: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
    prices_path: str = "configs/prices.yaml"
    source: str = ""  # the file this config was read from (set by load_config)

    @model_validator(mode="after")
    def _valid_k(self) -> BenchmarkConfig:
        if not self.retrieval_k or any(k < 1 for k in self.retrieval_k):
            raise ValueError(f"retrieval_k must be a non-empty list of integers >= 1 (got {list(self.retrieval_k)})")
        if len(set(self.retrieval_k)) != len(self.retrieval_k):
            raise ValueError(f"retrieval_k has duplicates: {list(self.retrieval_k)}")
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> BenchmarkConfig:
        for label, items in (
            ("dataset", self.datasets),
            ("memory system", self.memory_systems),
            ("reader", self.readers),
            ("judge", self.judges),
        ):
            names = [i.name for i in items]
            repeated = [i.name for i in items if getattr(i, "repeats", 1) != 1]
            if repeated and label not in ("reader", "judge"):
                raise ValueError(f"'repeats' applies to readers and judges only; {label}(s) {repeated} set it")
            cut = [(i.name, tuple(getattr(i, "cutoffs", ()))) for i in items if getattr(i, "cutoffs", ())]
            if cut and label != "memory system":
                raise ValueError(f"'cutoffs' applies to memory systems only; {label}(s) {[n for n, _ in cut]} set it")
            for name, depths in cut:
                if any(c < 1 for c in depths) or len(set(depths)) != len(depths):
                    raise ValueError(f"memory system {name!r}: cutoffs must be distinct integers >= 1 "
                                     f"(got {list(depths)})")  # fmt: skip
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"duplicate {label} name(s) in config: {dupes}")
        return self

    @property
    def judge_block(self) -> str:
        """The block whose endpoint the judges use: ``judge_llm`` when the config has one, else ``llm``.

        Why a separate judge endpoint: a benchmark answers with the model under test and judges with
        a fixed, usually stronger one (LongMemEval and LoCoMo both judge with GPT-4o-class models),
        often at another provider with its own key and quota.
        """
        return "judge_llm" if self.judge_llm is not None else "llm"

    def judge_endpoint(self) -> LLMConfig | None:
        """The judges' endpoint (``judge_block``'s), None when the config has no LLM at all."""
        return self.judge_llm if self.judge_llm is not None else self.llm

    @property
    def base_dir(self) -> Path:
        """Relative paths in a config resolve against its project folder (pipeline/config/project.py):
        the clone for its own configs, the folder ``membench init`` made for a project's."""
        return config_base(Path(self.source)) if self.source else PROJECT_ROOT

    def resolved_prices_path(self) -> Path:
        return resolve_path(self.prices_path, self.base_dir)

    def resolved_results_dir(self) -> Path:
        return resolve_path(self.results_dir, self.base_dir)

    @property
    def config_name(self) -> str:
        """The Dagster scope of this config: ``name``, else the file stem made key-safe."""
        return self.name or re.sub(r"[^A-Za-z0-9_]", "_", Path(self.source).stem or "default")

    @property
    def config_hash(self) -> str:
        """sha256 (12 hex) of the config file's bytes: tags every run with what it ran."""
        try:
            data = Path(self.source).read_bytes()
        except OSError:
            data = self.model_dump_json().encode()
        return hashlib.sha256(data).hexdigest()[:12]

    def dataset(self, name: str) -> DatasetConfig:
        for d in self.datasets:
            if d.name == name:
                return d
        raise KeyError(f"dataset {name!r} is not in config {self.source}")


class ConfigError(ValueError):
    """The config file is missing or invalid (message names the file)."""


def config_path_from_env() -> Path:
    """``$MEMBENCH_CONFIG`` (relative to the working directory), else the default config of the
    project the working directory is in (pipeline/config/project.py)."""
    raw = os.environ.get(CONFIG_ENV)
    if not raw:
        found = default_config()
        if found is None:
            raise ConfigError(
                f"no membench project in {Path.cwd()} or above (a folder with workspace.yaml and "
                f"{DEFAULT_CONFIG_NAME}): create one with `membench init DIR`, or set {CONFIG_ENV}"
            )
        return found
    p = Path(raw)
    return p if p.is_absolute() else (Path.cwd() / p).resolve()


@lru_cache(maxsize=8)
def load_config(path: str | Path | None = None) -> BenchmarkConfig:
    """Read and validate a config file (default: ``$MEMBENCH_CONFIG`` or configs/sample.yaml)."""
    cfg_path = Path(path) if path else config_path_from_env()
    if not cfg_path.is_absolute():
        cfg_path = (PROJECT_ROOT / cfg_path).resolve() if not cfg_path.exists() else cfg_path.resolve()
    try:
        raw = yaml.safe_load(cfg_path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {cfg_path}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{cfg_path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{cfg_path}: top level must be a mapping")
    try:
        return BenchmarkConfig(**raw, source=str(cfg_path))
    except ValidationError as exc:  # one line naming the file, the entry and the key
        raise ConfigError(f"{cfg_path}: {describe_validation(exc, BenchmarkConfig)}") from None
    except Exception as exc:
        raise ConfigError(f"{cfg_path}: {exc}") from None
