"""Normalization of LoCoMo evidence ids (``D<session>:<turn>``, 1-based).

Why a separate module: the official file holds malformed ids (``"D8:6; D9:17"``, ``"D"``,
``"D:11:26"``, ``"D9:1 D4:4 D4:6"``, ``"D30:05"``); each repair is a rule with a named quirk kind
so the data-quality table says exactly what was changed.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_ID = re.compile(r"^D(\d+):(\d+)$")
_EXTRA_COLON = re.compile(r"^D:(\d+):(\d+)$")
_SPLIT = re.compile(r"[;,\s]+")


class EvidenceToken(NamedTuple):
    """One evidence id after repair: ``normalized`` is None when it could not be read."""

    raw: str
    normalized: str | None
    kinds: tuple[str, ...]  # quirk kinds met while repairing this token


def normalize_id(token: str) -> tuple[str | None, tuple[str, ...]]:
    """``"D30:05"`` -> ``"D30:5"`` (zero padded), ``"D:11:26"`` -> ``"D11:26"`` (extra colon)."""
    m = _ID.match(token)
    kinds: tuple[str, ...] = ()
    if not m:
        m = _EXTRA_COLON.match(token)
        if not m:
            return None, ("evidence_unparseable",)
        kinds = ("evidence_extra_colon",)
    session, turn = m.groups()
    normalized = f"D{int(session)}:{int(turn)}"
    if normalized != f"D{session}:{turn}":
        kinds += ("evidence_zero_padded",)
    return normalized, kinds


def split_evidence(raw: str) -> list[EvidenceToken]:
    """Split joined ids (``;``/``,`` or whitespace) and normalize each."""
    parts = [p for p in _SPLIT.split(raw.strip()) if p]
    joined: tuple[str, ...] = ()
    if len(parts) > 1:
        joined = ("evidence_semicolon_joined",) if ";" in raw or "," in raw else ("evidence_space_joined",)
    if not parts:
        return [EvidenceToken(raw, None, ("evidence_unparseable",))]
    tokens = []
    for part in parts:
        normalized, kinds = normalize_id(part)
        tokens.append(EvidenceToken(raw, normalized, joined + kinds))
    return tokens
