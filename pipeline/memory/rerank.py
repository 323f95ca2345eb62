"""Cross-encoder reranking of the fused top-N (stage 3 of seed 003).

Why by local path only: the reranker is a real ``sentence_transformers.CrossEncoder`` read from
a directory (no hub download at run time is allowed); when no path is configured the hybrid
memory skips this stage and says so in ``RetrievalResult.notes``. Score = sigmoid(logit) of the
(query, memory) pair, in [0, 1] (seed 003). Loaded models are shared across memory instances
(one per LongMemEval question) through a small per-path cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.embeddings.spec import hub_offline
from pipeline.memory.params import MemoryConfigError


class CrossEncoderReranker:
    """Scores (query, text) pairs with a local cross-encoder; higher = more relevant."""

    def __init__(self, path: str, max_length: int = 512, batch_size: int = 16) -> None:
        if not (Path(path) / "config.json").is_file():
            raise MemoryConfigError(
                f"cross_encoder_path {path!r} is not a local model directory (no config.json); "
                "the reranker is only ever loaded from disk"
            )
        self.path, self.max_length, self.batch_size = path, max_length, batch_size
        self._model = _load(path, max_length)

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """sigmoid(cross-encoder logit) per text, shape (len(texts),)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        import torch

        out = self._model.predict(
            [(query, t) for t in texts],
            batch_size=self.batch_size,
            activation_fn=torch.nn.Sigmoid(),
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)[:, 0]


@lru_cache(maxsize=2)
def _load(path: str, max_length: int) -> Any:  # CrossEncoder, imported lazily (torch is slow)
    hub_offline()
    from sentence_transformers import CrossEncoder

    return CrossEncoder(path, device="cpu", local_files_only=True, max_length=max_length)
