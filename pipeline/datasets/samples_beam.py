"""Render the BEAM and LoCoMo-Plus samples from pipeline.datasets.sample_script_beam.

Why here and not in samples.py: the BEAM sample is a folder tree in the official layout
(``beam/<tier>/<n>/chat.json``, ``chat_trunecated.json``, ``plan-<k>/chat.json``,
``probing_questions/probing_questions.json``), built with its own message numbering rules; the
LoCoMo-Plus sample is ``locomo_plus/locomo_plus.json`` beside a ``locomo10.json`` holding the
LoCoMo sample's conversations. pipeline.datasets.samples writes both with the other samples.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.datasets.sample_script_beam import BEAM_QUESTIONS, BEAM_SCRIPT, LOCOMO_PLUS_ITEMS, TRUNCATED_CHATS

BEAM_DIR = "beam"
LOCOMO_PLUS_DIR = "locomo_plus"
_LINE = re.compile(r"^(?:\[(?P<tag>\w+)\]\s+)?(?P<kind>U!|U\?|U\+|U|A):\s?(?P<text>.*)$")
_TAG = re.compile(r"\{(\w+)\}")


@dataclass
class _Part:
    """One chat file: a chat, or one plan part of a 10M chat (ids restart at 0 in each part)."""

    chat: str
    plan: str | None
    batches: list[dict[str, Any]] = field(default_factory=list)


def parse_beam_script(script: str = BEAM_SCRIPT) -> tuple[list[_Part], dict[str, dict[str, int]]]:
    """The chat parts in script order and, per chat, tag -> message id (10M: as combined)."""
    parts: list[_Part] = []
    tags: dict[str, dict[str, int]] = {}
    next_id: dict[str, int] = {}  # chat -> next id in the combined numbering
    local = 0
    for line in (raw.strip() for raw in script.strip().splitlines()):
        if line.startswith("=== "):
            chat, plan = (p.strip() for p in line[4:].split("|"))
            parts.append(_Part(chat, None if plan == "-" else plan))
            tags.setdefault(chat, {})
            next_id.setdefault(chat, 0)
            local = 0
        elif line.startswith("--- "):
            number, anchor = (p.strip() for p in line[4:].split("|"))
            parts[-1].batches.append({"batch_number": int(number), "turns": [], "time_anchor": None, "_anchor": anchor})
        elif line:
            part = parts[-1]
            m = _LINE.match(line)
            if m is None:
                raise ValueError(f"bad BEAM script line: {line!r}")
            _add_message(part, m, local)
            if m["tag"]:
                tags[part.chat][m["tag"]] = next_id[part.chat]
            local += 1
            next_id[part.chat] += 1
    return parts, tags


def _add_message(part: _Part, m: re.Match[str], mid: int) -> None:
    batch = part.batches[-1]
    kind, text = m["kind"], m["text"].strip()
    if kind == "A":
        batch["turns"][-1].append({"role": "assistant", "id": mid, "content": text})
        return
    if kind == "U+":
        batch["turns"][-1].append({"role": "user", "id": mid, "question_type": "followup_question", "content": text})
        return
    b, t = batch["batch_number"], len(batch["turns"]) + 1
    marker = f"{b},N/A" if kind == "U!" else f"{b},{t}"
    msg: dict[str, Any] = {"role": "user", "id": mid}
    if not batch["turns"]:
        msg["time_anchor"] = batch["_anchor"]
    msg["index"] = f"{b},{t + 1}" if kind == "U?" else f"{b},{t}"
    msg["question_type"] = "main_question"
    msg["content"] = f"{text} ->-> {marker}"
    batch["turns"].append([msg])


def _chat_json(batches: list[dict[str, Any]]) -> str:
    clean = [{k: v for k, v in b.items() if not k.startswith("_")} for b in batches]
    return json.dumps(clean, ensure_ascii=False, indent=4) + "\n"


def _source(value: Any, ids: dict[str, int]) -> Any:
    """``"{tag}"`` -> the message id, ``"'{tag}'"`` -> the id as a string; dicts and lists recurse."""
    if isinstance(value, dict):
        return {k: _source(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_source(v, ids) for v in value]
    if isinstance(value, str) and value.startswith("'"):
        return str(ids[_TAG.search(value)[1]])  # type: ignore[index]
    if isinstance(value, str):
        return ids[_TAG.fullmatch(value)[1]]  # type: ignore[index]
    return value


def _probing(chat: str, ids: dict[str, int]) -> str:
    out: dict[str, list[dict[str, Any]]] = {}
    for where, ability, fields_ in BEAM_QUESTIONS:
        if where != chat:
            continue
        q = {k: v for k, v in fields_.items() if k not in ("source", "rubric")}
        if "source" in fields_:
            q["source_chat_ids"] = _source(fields_["source"], ids)
        q["rubric"] = fields_["rubric"]
        out.setdefault(ability, []).append(q)
    return json.dumps(out, ensure_ascii=False, indent=4) + "\n"


def render_beam() -> dict[str, str]:
    """Relative path -> content of every BEAM sample file."""
    parts, tags = parse_beam_script()
    files: dict[str, str] = {}
    for part in parts:
        base = f"{BEAM_DIR}/{part.chat}"
        if part.plan is None:
            files[f"{base}/chat.json"] = _chat_json(part.batches)
            if part.chat in TRUNCATED_CHATS:
                files[f"{base}/chat_trunecated.json"] = _chat_json(part.batches[: TRUNCATED_CHATS[part.chat]])
        else:
            files[f"{base}/{part.plan}/chat.json"] = _chat_json(part.batches)
    for chat, ids in tags.items():
        files[f"{BEAM_DIR}/{chat}/probing_questions/probing_questions.json"] = _probing(chat, ids)
    return files


def render_locomo_plus(locomo_json: str) -> dict[str, str]:
    """The LoCoMo-Plus sample folder: its items, and the LoCoMo sample as ``locomo10.json``."""
    items = [{**item, "model_name": "membench-sample"} for item in LOCOMO_PLUS_ITEMS]
    return {
        f"{LOCOMO_PLUS_DIR}/locomo_plus.json": json.dumps(items, ensure_ascii=False, indent=1) + "\n",
        f"{LOCOMO_PLUS_DIR}/locomo10.json": locomo_json,
    }
