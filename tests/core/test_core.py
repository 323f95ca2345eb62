"""Registry, partition keys and config: the small pieces every stage relies on."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config.model import ConfigError, load_config
from pipeline.core.partitions import KeyRegistry, PartitionKeyCollision, dataset_of, partition_key, sanitize
from pipeline.util.registry import Registry, RegistryError


def test_registry_unknown_and_duplicate_names_fail_loudly() -> None:
    reg: Registry[int] = Registry("widget")
    reg.add("a", 1)
    assert reg.get("a") == 1
    with pytest.raises(RegistryError, match="duplicate widget name 'a'"):
        reg.add("a", 2)
    with pytest.raises(RegistryError, match=r"unknown widget 'b'; known: a"):
        reg.get("b")


@pytest.mark.parametrize(
    ("dataset", "qid", "key"),
    [
        ("locomo", "conv-26_q0", "locomo__conv-26_q0"),
        ("lme_s", "gpt4_2655b836_abs", "lme_s__gpt4_2655b836_abs"),
        ("lme_s", "a/b c.d", "lme_s__a-b-c-d"),
    ],
)
def test_partition_keys_are_sanitized(dataset: str, qid: str, key: str) -> None:
    assert partition_key(dataset, qid) == key
    assert dataset_of(key) == dataset
    assert sanitize("ü:x") == "--x"


def test_key_registry_rejects_duplicates_and_collisions() -> None:
    reg = KeyRegistry("ds")
    reg.key_for("q.1")
    with pytest.raises(PartitionKeyCollision, match=r"duplicate question_id 'q\.1'"):
        reg.key_for("q.1")
    with pytest.raises(PartitionKeyCollision, match="both sanitize to partition key 'ds__q-1'"):
        reg.key_for("q/1")


def test_config_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets: [{name: x, loader: locomo, path: p, typo: 1}]\n")
    with pytest.raises(ConfigError, match=str(bad)):
        load_config(str(bad))
    dup = tmp_path / "dup.yaml"
    dup.write_text(
        "datasets: [{name: x, loader: locomo, path: p}]\n"
        "memory_systems: [{name: a, kind: rag}, {name: a, kind: hybrid}]\n"
    )
    with pytest.raises(ConfigError, match="duplicate memory system name"):
        load_config(str(dup))
    with pytest.raises(ConfigError, match="not found"):
        load_config(str(tmp_path / "missing.yaml"))


def test_bundled_configs_are_valid(project_root: Path) -> None:
    for path in sorted((project_root / "configs").glob("*.yaml")):
        if path.name == "prices.yaml" or path.name.startswith("dagster"):  # Dagster instance configs
            continue
        cfg = load_config(str(path))
        assert cfg.datasets, path
