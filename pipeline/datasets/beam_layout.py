"""Where a BEAM release keeps a chat's messages and questions (the folder layout, not the records).

Why a module of its own: BEAM is the one benchmark read from a folder tree, not one file, and
which file holds a chat's messages is a rule of the official pipeline, not of the JSON:

- ``<tier>/<n>/chat.json``: a list of batches ``{batch_number, time_anchor, turns}``;
- ``<tier>/<n>/chat_trunecated.json`` (the release's spelling): a prefix of ``chat.json`` that the
  official answer generation (``answer_generation.py``) and probing-question generation
  (``main.py``) read instead of ``chat.json`` whenever it exists (26 chats of the release: 10 of
  100K, 16 of 1M); the loader does the same and counts it (``truncated_chat_used``);
- the 10M tier: ``<n>/plan-<k>/chat.json`` parts (k = 0, 1, ...), each a list of batches whose
  message ids restart at 0; the official ``download_dataset.py`` combines them into one
  ``chat.json`` holding ``[{"plan-1": [batches]}, {"plan-2": [...]}, ...]`` with the ids of each
  later plan shifted by the previous plan's last id + 1. Both shapes are read; a chat folder with
  a ``chat.json`` uses it, else its plan parts;
- ``<tier>/<n>/probing_questions/probing_questions.json``: ability -> list of questions.

A dataset ``path`` is one tier folder (its numbered chat folders, in numeric order) or one chat
folder. ``source_files`` lists every file a conversion reads, so the converter's manifest notices
an edit to any of them (a folder's own mtime does not change when a file in it is rewritten).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.datasets.base import DatasetFileError
from pipeline.datasets.sources import iter_json_array

CHAT_FILE = "chat.json"
TRUNCATED_CHAT_FILE = "chat_trunecated.json"  # sic: the release's file name
QUESTIONS_FILE = Path("probing_questions") / "probing_questions.json"
_PLAN = re.compile(r"^plan-(\d+)$")
LAYOUT_FIELD = "<layout>"


@dataclass(frozen=True)
class ChatFolder:
    """One BEAM chat: ``<tier>/<name>``; its haystack id is ``<tier>-<name>``."""

    tier: str
    name: str
    folder: Path

    @property
    def haystack_id(self) -> str:
        return f"{self.tier}-{self.name}"

    @property
    def questions_file(self) -> Path:
        return self.folder / QUESTIONS_FILE

    def plan_parts(self) -> tuple[Path, ...]:
        """The 10M tier's ``plan-<k>/chat.json`` parts, in plan order (k numeric)."""
        found = []
        for sub in self.folder.iterdir():
            m = _PLAN.match(sub.name)
            if m and sub.is_dir() and (sub / CHAT_FILE).is_file():
                found.append((int(m.group(1)), sub / CHAT_FILE))
        return tuple(p for _, p in sorted(found))

    def message_files(self) -> tuple[tuple[Path, ...], str]:
        """The file(s) holding the messages and which rule chose them (``truncated``, ``chat``,
        ``plan_parts``; ``missing`` with no file at all)."""
        if (self.folder / TRUNCATED_CHAT_FILE).is_file():
            return (self.folder / TRUNCATED_CHAT_FILE,), "truncated"
        if (self.folder / CHAT_FILE).is_file():
            return (self.folder / CHAT_FILE,), "chat"
        parts = self.plan_parts()
        return (parts, "plan_parts") if parts else ((), "missing")


def _is_chat_folder(folder: Path) -> bool:
    if (folder / QUESTIONS_FILE).is_file() or (folder / CHAT_FILE).is_file():
        return True
    return (folder / TRUNCATED_CHAT_FILE).is_file() or bool(ChatFolder("", "", folder).plan_parts())


def _order(name: str) -> tuple[int, int, str]:
    """Numbered chat folders in numeric order (1, 2, ..., 10), any other name after them."""
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def find_chats(path: Path) -> list[ChatFolder]:
    """The chats under ``path`` (a tier folder or one chat folder); a file error otherwise."""
    if not path.exists():
        raise DatasetFileError(path, "folder not found", field=LAYOUT_FIELD)
    if not path.is_dir():
        raise DatasetFileError(
            path,
            "BEAM is read from a folder: a tier (<tier>/<n>/chat.json + probing_questions/) or one chat folder",
            field=LAYOUT_FIELD,
        )
    if _is_chat_folder(path):
        return [ChatFolder(path.parent.name, path.name, path)]
    subs = sorted((d for d in path.iterdir() if d.is_dir() and _is_chat_folder(d)), key=lambda d: _order(d.name))
    if not subs:
        raise DatasetFileError(
            path, "no BEAM chat folder in it (<n>/chat.json and <n>/probing_questions/probing_questions.json)",
            field=LAYOUT_FIELD,
        )  # fmt: skip
    return [ChatFolder(path.name, d.name, d) for d in subs]


def source_files(path: Path) -> list[Path]:
    """Every file a conversion of ``path`` reads (messages and questions of each chat), sorted."""
    files: list[Path] = []
    for chat in find_chats(path):
        files.extend(chat.message_files()[0])
        if chat.questions_file.is_file():
            files.append(chat.questions_file)
    return sorted(files)


@dataclass(frozen=True)
class RawBatch:
    """One batch as read: its plan (``plan-<k>``; None outside the 10M tier), index and object."""

    plan: str | None
    index: int
    file: Path
    obj: Any


def iter_batches(files: tuple[Path, ...], rule: str) -> Iterator[RawBatch]:
    """The chat's batches in order, streamed: one file of batches (or of ``{"plan-<k>": batches}``
    items, the combined 10M shape), or the plan parts one after the other."""
    if rule == "plan_parts":
        for file in files:
            plan = file.parent.name
            for index, obj in iter_json_array(file):
                yield RawBatch(plan, index, file, obj)
        return
    for file in files:
        for index, obj in iter_json_array(file):
            label = combined_plan_label(obj)
            if label is None:
                yield RawBatch(None, index, file, obj)
                continue
            batches = obj[label]
            if not isinstance(batches, list):
                yield RawBatch(label, index, file, batches)  # the parser names the bad value
                continue
            for j, batch in enumerate(batches):
                yield RawBatch(label, j, file, batch)


def combined_plan_label(obj: Any) -> str | None:
    """``plan-<k>`` when ``obj`` is an item of the combined 10M ``chat.json`` (a dict with no
    ``turns`` whose one non-null value sits under a ``plan-<k>`` key), else None."""
    if not isinstance(obj, dict) or "turns" in obj:
        return None
    labels = [k for k, v in obj.items() if v is not None and _PLAN.match(str(k))]
    return labels[0] if len(labels) == 1 else None
