"""Content hashes of canonical question records: what a question's results were computed from.

Why: completion used to key on the unit's configuration only, so editing a gold answer or a
question text recomputed nothing. A question's record hash covers every field of its canonical
row (except its position in the file) and the content keys of its haystack's sessions (session
keys are content hashes), so any edit to the question, its gold data or its conversation changes it.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict

import pyarrow as pa

_IGNORED = frozenset({"record_index"})  # moving a record in the file changes nothing it computes


def _digest(payload: object) -> str:
    text = json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def haystack_sessions(haystacks: pa.Table | None) -> dict[str, list[str]]:
    """haystack_id -> its session keys in haystack order."""
    out: dict[str, list[tuple[int, str]]] = defaultdict(list)
    if haystacks is not None:
        cols = haystacks.select(["haystack_id", "position", "session_key"]).to_pydict()
        for hid, pos, key in zip(cols["haystack_id"], cols["position"], cols["session_key"], strict=True):
            out[hid].append((pos, key))
    return {hid: [k for _, k in sorted(pairs)] for hid, pairs in out.items()}


def question_hashes(questions: pa.Table, haystacks: pa.Table | None) -> dict[str, str]:
    """partition_key -> hash of the question's row and its haystack's session keys."""
    sessions = haystack_sessions(haystacks)
    out: dict[str, str] = {}
    for row in questions.to_pylist():
        content = {k: v for k, v in row.items() if k not in _IGNORED}
        content["haystack_sessions"] = sessions.get(row.get("haystack_id") or "", [])
        out[row["partition_key"]] = _digest(content)
    return out


def failure_hash(message: str) -> str:
    """The 'record' of a question whose canonical record failed to load: its error."""
    return _digest({"load_failure": message})
