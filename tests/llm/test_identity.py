"""The LLM cache key holds exactly the endpoint's identity fields: a real client, the fake server.

For every field of an ``llm:`` block: the same question asked once with the base settings, then
with that field changed. An identity field must miss the cache (the server is asked again), any
other field must be answered from the cache (the server, or a second one at another base_url, is
not asked): the cache key and the unit identity use the same fields (pipeline/config/identity.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.config.identity import FIELDS, IDENTITY
from pipeline.config.model import LLMConfig
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, running_fake_server

CHANGED: dict[str, Any] = {
    "base_url": "<second server>",
    "model": "other-model",
    "model_tag": "q4_k_m",
    "api_key_env": "MEMBENCH_OTHER_KEY",
    "temperature": 0.7,
    "max_tokens": 64,
    "timeout_s": 30.0,
    "connect_timeout_s": 2.0,
    "max_retries": 1,
    "unreachable_retries": 1,
    "probe_after_s": 5.0,
    "max_concurrency": 2,
    "requests_per_minute": 6000.0,
    "tokens_per_minute": 1e7,
    "stop_after_unreachable": 2,
}
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with running_fake_server() as first, running_fake_server() as second:
        yield first, second


def test_every_field_of_an_endpoint_has_a_case() -> None:
    assert set(CHANGED) == set(LLMConfig.model_fields)


@pytest.mark.parametrize("field", sorted(CHANGED))
def test_a_changed_setting_misses_the_cache_iff_it_is_identity(
    field: str, servers: tuple[FakeOpenAIServer, FakeOpenAIServer], tmp_path: Path
) -> None:
    first, second = servers
    base = LLMConfig(base_url=first.base_url, model="fake-model", api_key_env="MEMBENCH_TEST_KEY")
    value = second.base_url if CHANGED[field] == "<second server>" else CHANGED[field]
    changed = base.model_copy(update={field: value})
    asked = first.request_count + second.request_count
    for cfg in (base, changed):
        client = OpenAIChatClient.from_config(cfg, cache_dir=tmp_path / "cache")
        try:
            reply = client.chat(QUESTION)
        finally:
            client.close()
        assert reply.ok
    identity = FIELDS[f"llm.{field}"].cls == IDENTITY
    assert (reply.cache_hit is False) is identity
    assert first.request_count + second.request_count - asked == (2 if identity else 1)
