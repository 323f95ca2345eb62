"""The soak's counting logic, kept apart from the processes it drives so a unit test can feed it.

Why pure functions over plain records: the figures the soak prints must be 0, and a 0 is only
worth something if the counter would have said 1. tests/run/test_soak_counts.py feeds these
functions hand-made request logs and progress rows and checks every count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# one stage name per kill target, in pipeline order; "start": the run exists but no step has begun
TARGETS = ("start", "canonical", "embeddings", "memory", "retrieval", "answers", "judgments", "report")
# the soak's weights: the LLM stages are where 429/500/timeouts and cached replies meet a kill
WEIGHTS = {"start": 1, "canonical": 1, "embeddings": 1, "memory": 1, "retrieval": 1, "answers": 3,
           "judgments": 3, "report": 1}  # fmt: skip
STEP_STAGE = {
    "canonical": "canonical",
    "embeddings": "embeddings",
    "ingestion": "memory",
    "retrievals": "retrieval",
    "answers": "answers",
    "judgments": "judgments",
    "retrieval_report": "report",
    "benchmark_report": "report",
}


@dataclass(frozen=True)
class Request:
    """One request the fake endpoint saw: ``delivered`` is a 200 with a usable reply."""

    id: int
    key: str  # the LLM cache key of the request (model, messages, params)
    begin: float
    end: float | None  # None: still open when the log was read
    delivered: bool


def in_flight_at(requests: Iterable[Request], kill: float) -> set[int]:
    """Requests in flight at the kill, from a log read once the killed process is gone: not
    answered before the kill signal was sent (some arrive after it: SIGKILL is not instant)."""
    return {r.id for r in requests if r.end is None or r.end > kill}


def delivered_uncached(requests: Iterable[Request], kill: float, cached: Iterable[str], window_s: float) -> set[int]:
    """Replies delivered within ``window_s`` before the kill whose key the cache does not hold
    after it: sent, but the killed process never stored them (in flight on the client's side)."""
    have = set(cached)
    return {
        r.id
        for r in requests
        if r.delivered and r.end is not None and kill - window_s <= r.end <= kill and r.key not in have
    }


def twice_pairs(requests: Sequence[Request], excused: set[int]) -> list[tuple[Request, Request]]:
    """(first delivery, later request) for every request of a key whose reply had already been
    delivered by a request not ``excused`` (in flight at a kill): a reply paid for twice."""
    pairs = []
    for r in requests:
        first = next(
            (d for d in requests
             if d.key == r.key and d.delivered and d.id not in excused and d.end is not None and d.end <= r.begin),
            None,
        )  # fmt: skip
        if first is not None:
            pairs.append((first, r))
    return pairs


def requested_twice(requests: Sequence[Request], excused: set[int]) -> int:
    """How many requests asked for a reply already delivered (see ``twice_pairs``)."""
    return len(twice_pairs(requests, excused))


def rows_lost(progress: Iterable[Mapping[str, object]], expected_failed: set[str]) -> int:
    """``progress`` rows not done after the final run: missing ones, and failed ones except the
    partitions expected to fail (the bad record's)."""
    lost = 0
    for row in progress:
        status, key = row["status"], row["partition_key"]
        if status == "missing" or (status == "failed" and key not in expected_failed):
            lost += 1
    return lost


def unexpected_ok(progress: Iterable[Mapping[str, object]], expected_failed: set[str]) -> int:
    """Rows of an expected-to-fail partition recorded as done (a failure scored as a result)."""
    return sum(1 for row in progress if row["partition_key"] in expected_failed and row["status"] == "done")


def passed(step: str, target: str) -> bool:
    """Whether a step that starts logging means the ``target`` stage is over. The retrieval report
    needs only the retrievals, so Dagster may run it before the answers or the judgments."""
    if step == "retrieval_report":
        return TARGETS.index(target) <= TARGETS.index("retrieval")
    return TARGETS.index(STEP_STAGE[step]) > TARGETS.index(target)


def step_of_line(line: str, prefix: str) -> tuple[str, str] | None:
    """(step, message) of a Dagster log line of a step of config ``prefix``, else None."""
    marker = f" - {prefix}__"
    at = line.find(marker)
    if at < 0:
        return None
    step, sep, message = line[at + len(marker) :].partition(" - ")
    return (step.strip(), message) if sep and step.strip() in STEP_STAGE else None


def to_compute(message: str) -> int | None:
    """N of a stage's first line "...: 16 questions, 0 already done, N to compute, ..."."""
    for part in message.split(","):
        words = part.split()
        if len(words) >= 3 and words[-2:] == ["to", "compute"] and words[-3].isdigit():
            return int(words[-3])
    return None


def table(rows: Sequence[tuple[str, int]], figures: Mapping[str, int]) -> str:
    """The printed result: trials per stage the kill landed in, then each count."""
    width = max(len(name) for name in [*figures, *(s for s, _ in rows)])
    lines = ["kills landed per stage:"]
    lines += [f"  {stage:<{width}}  {n}" for stage, n in rows]
    lines += ["figures (all must be 0):"]
    lines += [f"  {name:<{width}}  {value}" for name, value in figures.items()]
    return "\n".join(lines)


def broken_files(revisions: Mapping[str, Sequence[str] | None]) -> list[str]:
    """The SQLite files of a Dagster home that do not record exactly one schema revision (file ->
    its revisions; None: no revision table, a file Dagster did not stamp, left out)."""
    return sorted(name for name, revs in revisions.items() if revs is not None and len(revs) != 1)
