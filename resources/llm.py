"""The ``llm`` and ``judge_llm`` Dagster resources: one plain LLM client per run and role.

The client itself (cache, retries, concurrency gate, costs) is pipeline/llm/client.py; this resource
only builds it from the benchmark object on first use and closes it when the run ends.
"""

from __future__ import annotations

import threading

import dagster as dg
from pydantic import Field, PrivateAttr

from pipeline.llm.client import ROLE_READER, OpenAIChatClient, Role, client_for
from resources.benchmark import BenchmarkResource

_CLIENT_LOCK = threading.Lock()  # LLMResource.client(): one client per resource, however many threads ask


class LLMResource(dg.ConfigurableResource):
    """The run's LLM client for ``role`` (``reader`` or ``judges``), built from the benchmark object.

    Why it reads the endpoint from the benchmark and not from fields of its own: every endpoint
    setting enters a unit hash, which the benchmark object computes; a resource configured apart
    could answer with one model and file the answers under another's hash. The client is built on
    first use and kept for the run (one concurrency gate for every stage of the run that uses it);
    ``client()`` is None when the config has no such endpoint. The API key is the only setting of
    its own: ``dg.EnvVar`` here, or empty to read ``$<api_key_env>`` of the config at call time.
    """

    benchmark: BenchmarkResource
    role: Role = ROLE_READER
    api_key: str = Field(default="", repr=False, description="Set with dg.EnvVar; never stored")

    _client: OpenAIChatClient | None = PrivateAttr(default=None)
    _built: bool = PrivateAttr(default=False)

    def client(self) -> OpenAIChatClient | None:
        with _CLIENT_LOCK:
            if not self._built:
                self._client = client_for(self.benchmark.load(), self.role, self.api_key)
                self._built = True
        return self._client

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._client is not None:
            self._client.close()
