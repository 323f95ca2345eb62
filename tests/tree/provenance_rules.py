"""Token-shingle fingerprints of functions, to catch code brought in from another project.

Why: membench may use other projects' definitions, figures and protocol prompts, never their
code. tests/data/official/code_fingerprints.json holds, for each scoring function of the
benchmarks membench follows, the set of hashed token shingles computed with ``fingerprint``
(outside this repository, on the official files): hashes only, no code. ``containment`` then
tells how much of an official function reappears in one of ours; a copy, even renamed or lightly
edited, shares most of its shingles, an independent implementation of the same definition few.
"""

from __future__ import annotations

import ast
import hashlib
import io
import keyword
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass

SHINGLE = 6  # tokens per shingle
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
         tokenize.ENDMARKER}  # fmt: skip


@dataclass(frozen=True)
class FunctionUnit:
    """One function (nested ones count on their own) and its shingle hashes."""

    qualname: str
    lineno: int
    shingles: frozenset[str]


def _docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> range:
    first = node.body[0] if node.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return range(first.lineno, (first.end_lineno or first.lineno) + 1)
    return range(0)


def _tokens(segment: str, skip_lines: range, offset: int) -> list[str]:
    """The function's tokens after its name (so a renamed copy still matches), docstring and
    comments left out; identifiers other than keywords are kept as written."""
    out: list[str] = []
    seen_name = False
    for tok in tokenize.generate_tokens(io.StringIO(segment).readline):
        if tok.type in _SKIP or (tok.start[0] + offset) in skip_lines:
            continue
        if not seen_name:  # drop decorators, 'def' / 'async def' and the name itself
            seen_name = tok.type == tokenize.NAME and not keyword.iskeyword(tok.string) and out[-1:] == ["def"]
            out.append(tok.string)
            if seen_name:
                out.clear()
            continue
        out.append(tok.string)
    return out


def fingerprint(tokens: list[str]) -> frozenset[str]:
    """Hashes (12 hex digits of sha256) of every run of ``SHINGLE`` consecutive tokens."""
    runs = (" ".join(tokens[i : i + SHINGLE]) for i in range(max(len(tokens) - SHINGLE + 1, 0)))
    return frozenset(hashlib.sha256(run.encode()).hexdigest()[:12] for run in runs)


def function_units(source: str) -> Iterator[FunctionUnit]:
    """Every function and method of a Python source, with its fingerprint."""
    tree = ast.parse(source)
    parents: dict[ast.AST, str] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            named = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            parents[child] = parents.get(node, "") + (node.name + "." if named else "")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            segment = ast.get_source_segment(source, node, padded=True) or ""
            tokens = _tokens(segment, _docstring_lines(node), node.lineno - 1)
            yield FunctionUnit(parents.get(node, "") + node.name, node.lineno, fingerprint(tokens))


def containment(official: frozenset[str], ours: frozenset[str]) -> float:
    """Share of an official function's shingles found in one of ours."""
    return len(official & ours) / len(official) if official else 0.0
