"""The built-in readers by kind: the explicit list a config's ``readers:`` kind is looked up in.

Why a list and not registration on import: which readers exist must not depend on which modules a
process happened to import. Plugins are added to ``READERS`` when a config names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from pipeline.agentic import reader as agentic_reader
from pipeline.readers import llm as llm_reader
from pipeline.readers import offline
from pipeline.readers.base import Reader, ReaderDeps
from pipeline.util.registry import Registry

BUILTIN_READERS: Mapping[str, type[Reader]] = {
    llm_reader.KIND: llm_reader.LLMReader,
    offline.KIND: offline.OfflineReader,
    agentic_reader.KIND: agentic_reader.AgenticReader,
}

READERS: Registry[type[Reader]] = Registry.of("reader", BUILTIN_READERS)


def build_reader(kind: str, params: Mapping[str, Any] | BaseModel, deps: ReaderDeps) -> Reader:
    """Instantiate a reader kind (unknown kind = RegistryError); ``params`` is a dict or the reader's
    parsed params model (a resolved config entry's ``params``)."""
    return READERS.get(kind)(params if isinstance(params, BaseModel) else dict(params), deps)
