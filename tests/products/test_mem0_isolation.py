"""The isolation canary on a real memory product: mem0 (its library, FAISS store, LLM and embedding
calls through membench's proxy to the fake OpenAI server) keeps each haystack's memories apart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.config.model import ComponentConfig
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, running_fake_server
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.isolation import STATUS_ISOLATED, canary_code, check_isolation
from pipeline.memory.systems import SystemSpec
from pipeline.products.mem0_memory import Mem0Memory
from tests.support.memory import encoder

SPEC = SystemSpec.from_class(ComponentConfig(name="mem0", kind="mem0"), Mem0Memory, "hash-mem0", None)
CODE = canary_code(SPEC.unit_hash)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply='{"memory": []}') as srv:
        for match, fact in (
            (f"Marlowe climbing gym is {CODE}", f"Locker code at the Marlowe climbing gym is {CODE}"),
            ("joined the Marlowe climbing gym", "Joined the Marlowe climbing gym and got a locker"),
        ):
            srv.add_rule(match, json.dumps({"memory": [{"id": "0", "text": fact}]}))
        yield srv


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    return encoder(tmp_path_factory.mktemp("embedding-cache"))


def test_mem0_is_isolated(server: FakeOpenAIServer, enc: Encoder, tmp_path: Path) -> None:
    llm = OpenAIChatClient(base_url=server.base_url, model="fake-mem0", cache_dir=str(tmp_path / "llm"), max_retries=0)
    try:
        result = check_isolation(SPEC, MemoryDeps(enc, llm=llm, state_dir=tmp_path / "state"), nonce="_t")
    finally:
        llm.close()
    assert result.error is None and result.status == STATUS_ISOLATED
    assert result.control_found and not result.leaked and result.n_units_b >= 1
    # both sessions' extraction calls reached mem0's LLM: the canary was stored, in haystack A only
    assert any(CODE in json.dumps(r) for r in server.requests)
