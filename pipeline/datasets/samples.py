"""Render the bundled synthetic sample datasets from pipeline.datasets.sample_script.

Why generated: the samples must be byte-for-byte reproducible (a test regenerates them and
compares with the committed files) and mutually consistent across the three formats. They are
small but carry every known quirk, so the sample run exercises the same code paths as the real
data. The BEAM folder tree and the LoCoMo-Plus folder come from pipeline.datasets.samples_beam.
``python -m pipeline.datasets.samples [out_dir]`` rewrites them (default:
pipeline/sample_data/).
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple

from pipeline.datasets.dates import format_locomo, format_longmemeval
from pipeline.datasets.sample_script import (
    LOCOMO_QUESTIONS,
    LOCOMO_SCRIPT,
    LONGMEMEVAL_QUESTIONS,
    LONGMEMEVAL_SCRIPT,
    MC10_ADVERSARIAL_ANSWER,
    MC10_FILLER_CHOICES,
    MC10_NAIVE_LABELS,
)
from pipeline.datasets.samples_beam import render_beam, render_locomo_plus

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_data"
LOCOMO_FILE = "locomo_sample.json"
MC10_FILE = "locomo_mc10_sample.jsonl"
LONGMEMEVAL_S_FILE = "longmemeval_s_sample.json"
LONGMEMEVAL_ORACLE_FILE = "longmemeval_oracle_sample.json"
SAMPLE_FILES = (LOCOMO_FILE, MC10_FILE, LONGMEMEVAL_S_FILE, LONGMEMEVAL_ORACLE_FILE)  # the one-file samples

_TURN = re.compile(r"^(?:\[(?P<tag>\w+)\]\s+)?(?P<speaker>[^:]+):\s?(?P<text>.*)$")
_REF = re.compile(r"\{(\w+)(?:\|(colon|pad))?\}")


def _when(text: str) -> dt.datetime:
    return dt.datetime.strptime(text.strip(), "%Y-%m-%d %H:%M")


# ---- LoCoMo -------------------------------------------------------------------------------
class LocomoSession(NamedTuple):
    number: int
    when: dt.datetime
    summary: str | None  # None: a date key without a session
    turns: list[dict[str, Any]]


class LocomoConversation(NamedTuple):
    sample_id: str
    speakers: tuple[str, str]
    sessions: list[LocomoSession]
    tags: dict[str, tuple[int, int]]  # tag -> (session, 1-based turn)


def _image_fields(part: str) -> dict[str, Any]:
    fields = dict(kv.split("=", 1) for kv in part.split("; "))
    out: dict[str, Any] = {}
    if "url" in fields:
        out["img_url"] = [fields["url"]]
    out["blip_caption"] = fields["caption"]
    if "query" in fields:
        out["query"] = fields["query"]
    return out


def parse_locomo_script(script: str = LOCOMO_SCRIPT) -> list[LocomoConversation]:
    """The LoCoMo script as conversations with tagged turns."""
    convs: list[LocomoConversation] = []
    for line in (raw.strip() for raw in script.strip().splitlines()):
        if line.startswith("=== "):
            sample_id, a, b = (p.strip() for p in line[4:].split("|"))
            convs.append(LocomoConversation(sample_id, (a, b), [], {}))
        elif line.startswith("--- "):
            number, when, summary = (p.strip() for p in line[4:].split("|", 2))
            convs[-1].sessions.append(
                LocomoSession(int(number), _when(when), None if summary == "date only" else summary, [])
            )
        elif line:
            conv, session = convs[-1], convs[-1].sessions[-1]
            body, _, image = line.partition(" || ")
            m = _TURN.match(body)
            if m is None:
                raise ValueError(f"bad script line: {line!r}")
            dia = f"D{session.number}:{len(session.turns) + 1}"
            turn: dict[str, Any] = {"speaker": m["speaker"].strip()}
            if image:
                turn |= _image_fields(image)
            turn |= {"dia_id": dia, "text": m["text"].strip()}
            session.turns.append(turn)
            if m["tag"]:
                conv.tags[m["tag"]] = (session.number, len(session.turns))
    return convs


def _evidence_ref(text: str, tags: dict[str, tuple[int, int]]) -> str:
    def sub(m: re.Match[str]) -> str:
        s, t = tags[m[1]]
        return {"colon": f"D:{s}:{t}", "pad": f"D{s}:0{t}"}.get(m[2] or "", f"D{s}:{t}")

    return _REF.sub(sub, text)


def _locomo_qa(conv: LocomoConversation) -> list[dict[str, Any]]:
    items = []
    for sample_id, category, question, answer, adversarial, evidence in LOCOMO_QUESTIONS:
        if sample_id != conv.sample_id:
            continue
        item: dict[str, Any] = {"question": question}
        if answer is not None:
            item["answer"] = answer
        item["evidence"] = [_evidence_ref(e, conv.tags) for e in evidence]
        item["category"] = category
        if adversarial is not None:
            item["adversarial_answer"] = adversarial
        items.append(item)
    return items


def _locomo_record(conv: LocomoConversation) -> dict[str, Any]:
    a, b = conv.speakers
    conversation: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    observation: dict[str, Any] = {}
    events: dict[str, Any] = {}
    for s in conv.sessions:
        conversation[f"session_{s.number}_date_time"] = format_locomo(s.when)
        if s.summary is None:
            continue
        conversation[f"session_{s.number}"] = s.turns
        observation[f"session_{s.number}_observation"] = {
            name: [[t["text"], t["dia_id"]] for t in s.turns if t["speaker"] == name] for name in (a, b)
        }
        date = f"{s.when.day} {s.when.strftime('%B')}, {s.when.year}"
        events[f"events_session_{s.number}"] = {a: [], b: [], "date": date}
    return {
        "qa": _locomo_qa(conv),
        "conversation": conversation,
        "event_summary": events,
        "observation": observation,
        "session_summary": {f"session_{s.number}_summary": s.summary for s in conv.sessions if s.summary},
        "sample_id": conv.sample_id,
    }


def build_locomo() -> list[dict[str, Any]]:
    """locomo10.json-shaped records of the sample conversations."""
    return [_locomo_record(c) for c in parse_locomo_script()]


# ---- LoCoMo-MC10 --------------------------------------------------------------------------
def _mc10_choices(qid: str, answer: str, pool: list[str]) -> tuple[list[str], int]:
    rng = random.Random(qid)
    candidates = [c for c in dict.fromkeys([MC10_ADVERSARIAL_ANSWER, *pool, *MC10_FILLER_CHOICES]) if c != answer]
    distractors = [MC10_ADVERSARIAL_ANSWER] if answer != MC10_ADVERSARIAL_ANSWER else []
    rest = [c for c in candidates if c not in distractors]
    rng.shuffle(rest)
    distractors = (distractors + rest)[:9]
    rng.shuffle(distractors)
    index = rng.randrange(10)
    return [*distractors[:index], answer, *distractors[index:]], index


def _mc10_haystack(conv: LocomoConversation) -> dict[str, Any]:
    sessions = [s for s in conv.sessions if s.summary is not None]
    roles = {conv.speakers[0]: "user", conv.speakers[1]: "assistant"}
    return {
        "num_sessions": len(sessions),
        "haystack_session_ids": [f"session_{s.number}" for s in sessions],
        "haystack_session_datetimes": [s.when.isoformat() for s in sessions],
        "haystack_session_summaries": [s.summary for s in sessions],
        "haystack_sessions": [[{"role": roles[t["speaker"]], "content": t["text"]} for t in s.turns] for s in sessions],
    }


def build_mc10(locomo: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """MC10-shaped records (one per LoCoMo question, naive-numbering labels)."""
    convs = {c.sample_id: c for c in parse_locomo_script()}
    records = []
    for rec in locomo:
        conv = convs[rec["sample_id"]]
        haystack = _mc10_haystack(conv)
        pool = [str(q["answer"]) for q in rec["qa"] if "answer" in q and q["category"] != 5]
        for i, qa in enumerate(rec["qa"]):
            qid = f"{rec['sample_id']}_q{i}"
            answer = MC10_ADVERSARIAL_ANSWER if qa["category"] == 5 else str(qa["answer"])
            choices, index = _mc10_choices(qid, answer, pool)
            records.append(
                {
                    "question_id": qid,
                    "question": qa["question"],
                    "question_type": MC10_NAIVE_LABELS[qa["category"]],
                    "answer": answer,
                    "choices": choices,
                    "correct_choice_index": index,
                    "num_choices": len(choices),
                    "num_sessions": haystack["num_sessions"],
                    **{k: v for k, v in haystack.items() if k != "num_sessions"},
                }
            )
    return records


# ---- LongMemEval --------------------------------------------------------------------------
class LmeSession(NamedTuple):
    session_id: str
    when: dt.datetime
    turns: list[tuple[str, str, bool]]  # (role, content, has_answer)


def parse_longmemeval_script(script: str = LONGMEMEVAL_SCRIPT) -> dict[str, LmeSession]:
    """Named sessions of the LongMemEval script."""
    sessions: dict[str, LmeSession] = {}
    current: LmeSession | None = None
    for line in (raw.strip() for raw in script.strip().splitlines()):
        if line.startswith("--- "):
            name, sid, when = (p.strip() for p in line[4:].split("|"))
            current = sessions[name] = LmeSession(sid, _when(when), [])
        elif line and current is not None:
            role, _, text = line.partition(":")
            current.turns.append((role.rstrip("*"), text.strip(), role.endswith("*")))
    return sessions


def _lme_turns(session: LmeSession, mark: bool) -> list[dict[str, Any]]:
    if not mark:  # S: has_answer only on turns of answer sessions
        return [{"role": r, "content": c} for r, c, _ in session.turns]
    return [{"role": r, "content": c, "has_answer": h} for r, c, h in session.turns]


def _lme_record(q: tuple[Any, ...], sessions: dict[str, LmeSession], oracle: bool) -> dict[str, Any]:
    qid, qtype, question, answer, qdate, answer_names, fillers = q
    placed = [(sessions[n].when, n, True) for n in answer_names]
    if not oracle:
        for f in fillers:
            name, _, when = f.partition("@")
            placed.append((_when(when) if when else sessions[name].when, name, False))
    placed.sort()
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": question,
        "answer": answer,
        "question_date": format_longmemeval(_when(qdate)),
        "haystack_dates": [format_longmemeval(w) for w, _, _ in placed],
        "haystack_session_ids": [sessions[n].session_id for _, n, _ in placed],
        "haystack_sessions": [_lme_turns(sessions[n], is_answer) for _, n, is_answer in placed],
        "answer_session_ids": [sessions[n].session_id for n in answer_names],
    }


def build_longmemeval(oracle: bool) -> list[dict[str, Any]]:
    """LongMemEval S-shaped (answer + filler sessions) or oracle-shaped (answer sessions) records."""
    sessions = parse_longmemeval_script()
    return [_lme_record(q, sessions, oracle) for q in LONGMEMEVAL_QUESTIONS]


# ---- files --------------------------------------------------------------------------------
def render() -> dict[str, str]:
    """Path relative to the sample folder -> exact file content."""
    locomo = build_locomo()

    def dump(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, indent=1) + "\n"

    return {
        LOCOMO_FILE: dump(locomo),
        MC10_FILE: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in build_mc10(locomo)),
        LONGMEMEVAL_S_FILE: dump(build_longmemeval(oracle=False)),
        LONGMEMEVAL_ORACLE_FILE: dump(build_longmemeval(oracle=True)),
        **render_beam(),
        **render_locomo_plus(dump(locomo)),
    }


def write_samples(out_dir: Path = SAMPLE_DIR) -> list[Path]:
    """Write every sample file into ``out_dir``; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, content in render().items():
        path = out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else SAMPLE_DIR
    for path in write_samples(out):
        sys.stderr.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
