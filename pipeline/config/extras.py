"""The optional parts of membench (pip extras) and the one line that says how to install a missing one.

Why extras: the core install (every dataset, membench's own memory systems, the LLM reader and
judges, the Dagster UI, SQL) needs none of the product libraries, which are large and pin their
own dependencies. Each product and the MCP memory kind is an extra (pyproject.toml); a config
naming a kind whose extra is missing fails when it is loaded, in one line naming the extra and the
command that installs it: from the locked files in a clone, with pip elsewhere.
"""

from __future__ import annotations

from pipeline.config import project

# the extra each optional memory kind needs (pyproject.toml [project.optional-dependencies])
EXTRA_OF_KIND: dict[str, str] = {
    "mem0": "mem0",
    "langmem": "langmem",
    "graphiti": "graphiti",
    "hindsight": "hindsight",
    "mcp": "mcp",
}


# an extra whose part outside pip's reach (a server in a virtualenv of its own) a membench command installs
SERVER_INSTALLS: dict[str, str] = {"hindsight": "membench install-hindsight"}


def install_command(extra: str) -> str:
    """The command that installs ``extra``: the locked files in a clone, pip (or the membench command
    that makes its server's virtualenv) for an installed membench."""
    if project.in_clone():
        return f"bash scripts/setup.sh --extras {extra}"
    return SERVER_INSTALLS.get(extra, f"pip install 'membench[{extra}]'")


def missing_extra(kind: str, package: str, module: str) -> str:
    """The one-line config error for a memory kind whose library ``package`` (``module``) is not installed."""
    extra = EXTRA_OF_KIND.get(kind, kind)
    return (
        f"memory system kind {kind!r} needs the extra membench[{extra}] (package {package}, module {module!r}), "
        f"which is not installed: run `{install_command(extra)}`, or remove the entry with kind: {kind} "
        "from memory_systems"
    )
