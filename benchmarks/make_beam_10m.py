"""Build a 10M-shaped BEAM chat (``plan-<k>/chat.json`` parts) from the 1M chats of ../shared/datasets.

Why: the 10M tier could not be obtained, but its layout is known (pipeline/datasets/beam_layout.py)
and its size is what the scale figures are about. Each available 1M chat becomes one plan part
(its batches as released, ids from 0 as in the official parts); the probing questions are those of
the first chat (their ids point into plan-0, which keeps its ids). About 9 x 1M tokens, 16,002
messages: a stand-in of the right shape and size, not a BEAM chat (its plans are unrelated stories).

    .venv/bin/python benchmarks/make_beam_10m.py /tmp/beam_10m_data   # writes /tmp/beam_10m_data/10M/1/
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ONE_M = ROOT.parent / "shared" / "datasets" / "beam" / "chats" / "1M"


def build(out: Path, source: Path = ONE_M) -> Path:
    chats = sorted((d for d in source.iterdir() if d.name.isdigit()), key=lambda d: int(d.name))
    chat = out / "10M" / "1"
    if chat.exists():
        shutil.rmtree(chat)
    for k, src in enumerate(chats):
        (chat / f"plan-{k}").mkdir(parents=True)
        shutil.copy(src / "chat.json", chat / f"plan-{k}" / "chat.json")
    (chat / "probing_questions").mkdir()
    shutil.copy(chats[0] / "probing_questions" / "probing_questions.json", chat / "probing_questions")
    return chat


if __name__ == "__main__":
    target = build(Path(sys.argv[1]))
    sys.stdout.write(f"wrote {target} ({len(list(target.glob('plan-*')))} plan parts)\n")
