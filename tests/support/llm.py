"""An OpenAIChatClient pointed at the fake OpenAI-compatible server (real client, real socket, real cache)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, running_fake_server

JUDGE_MODEL = "fake-judge"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_fake_server(default_reply="I cannot tell.") as srv:
        yield srv


@pytest.fixture
def llm(server: FakeOpenAIServer, tmp_path: Path) -> Iterator[OpenAIChatClient]:
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"models:\n  {JUDGE_MODEL}: {{input_per_1m: 1.0, output_per_1m: 2.0}}\n")
    resource = OpenAIChatClient(
        base_url=server.base_url,
        model=JUDGE_MODEL,
        api_key="sk-test",
        cache_dir=str(tmp_path / "llm_cache"),
        prices_path=str(prices),
        timeout_s=2.0,
        max_retries=0,
        backoff_base_s=0.01,
        backoff_max_s=0.02,
    )
    yield resource
    resource.close()


def files_containing(root: Path, needle: str) -> list[Path]:
    """Files under ``root`` whose bytes hold ``needle`` (a secret must be in none of them)."""
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]
