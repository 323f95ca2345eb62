"""Question partition keys: one Dagster partition per (dataset, question) of a config.

Why the dataset in the key: one ``full_benchmark`` run covers every configured dataset, and a
Dagster asset has a single partitions definition, so keys of different datasets must never
collide. The Dagster partitions definition itself is built per config in assets/partitions.py;
this module is the pure key scheme (no Dagster).
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
KEY_SEP = "__"


class PartitionKeyCollision(ValueError):
    """Two different question ids sanitize to the same partition key."""


def sanitize(text: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` by ``-``."""
    return _UNSAFE.sub("-", text)


def partition_key(dataset: str, question_id: str) -> str:
    """``<dataset>__<sanitized question id>``; the original id is kept in ``questions.question_id``."""
    if KEY_SEP in dataset:
        raise ValueError(f"dataset name {dataset!r} must not contain {KEY_SEP!r}")
    return f"{sanitize(dataset)}{KEY_SEP}{sanitize(question_id)}"


def dataset_of(key: str) -> str:
    """The dataset prefix of a partition key."""
    return key.split(KEY_SEP, 1)[0]


class KeyRegistry:
    """Tracks key -> original id while loading, rejecting collisions and duplicate ids."""

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        self._by_key: dict[str, str] = {}

    def key_for(self, question_id: str) -> str:
        """Return the key, raising on a duplicate id or on a sanitization collision."""
        key = partition_key(self.dataset, question_id)
        prior = self._by_key.get(key)
        if prior is not None:
            if prior == question_id:
                raise PartitionKeyCollision(f"duplicate question_id {question_id!r}")
            raise PartitionKeyCollision(
                f"question_id {question_id!r} and {prior!r} both sanitize to partition key {key!r}"
            )
        self._by_key[key] = question_id
        return key
