"""The built-in memory systems by kind: the explicit list a config's ``memory_systems:`` kind is looked up in.

Why a list and not registration on import: which systems exist must not depend on which modules a
process happened to import. Plugins are added to ``MEMORY_SYSTEMS`` when a config names them.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.agentic import agent_memory
from pipeline.agentic.mcp import memory as mcp_memory
from pipeline.memory import (
    flat_bm25,
    flat_dense,
    full_context,
    locomo_full_context,
    locomo_rag,
    notes,
    rag,
    summaries,
)
from pipeline.memory.base import MemorySystem
from pipeline.memory.hybrid import HybridMemory
from pipeline.products import graphiti_memory, hindsight_memory, langmem_memory, mem0_memory
from pipeline.util.registry import Registry

BUILTIN_MEMORY_SYSTEMS: Mapping[str, type[MemorySystem]] = {
    full_context.KIND: full_context.FullContextMemory,
    locomo_full_context.KIND: locomo_full_context.LocomoFullContextMemory,
    rag.KIND: rag.RagMemory,
    summaries.KIND: summaries.SummariesMemory,
    notes.KIND: notes.NotesMemory,
    "hybrid": HybridMemory,
    mem0_memory.KIND: mem0_memory.Mem0Memory,
    langmem_memory.KIND: langmem_memory.LangmemMemory,
    flat_bm25.KIND: flat_bm25.FlatBm25Memory,
    flat_dense.KIND: flat_dense.FlatDenseMemory,
    locomo_rag.KIND: locomo_rag.LocomoRagMemory,
    graphiti_memory.KIND: graphiti_memory.GraphitiMemory,
    hindsight_memory.KIND: hindsight_memory.HindsightMemory,
    agent_memory.KIND: agent_memory.AgentMemory,
    mcp_memory.KIND: mcp_memory.McpMemory,
}

MEMORY_SYSTEMS: Registry[type[MemorySystem]] = Registry.of("memory system", BUILTIN_MEMORY_SYSTEMS)
