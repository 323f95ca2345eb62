"""The threads that run watched requests and probes (pipeline/llm/hang.py ``_Workers``)."""

from __future__ import annotations

import threading

from pipeline.llm.hang import _Workers, watched


def run_on(workers: _Workers, task: threading.Event | None = None) -> int:
    """Submit one task and wait for it; the id of the thread that ran it."""
    done = threading.Event()
    ran_on: list[int] = []

    def work() -> None:
        ran_on.append(threading.get_ident())
        if task is not None:
            task.wait(10)
        done.set()

    workers.submit(work)
    assert task is not None or done.wait(10)
    return ran_on[0] if ran_on else -1


def test_a_finished_tasks_thread_runs_the_next_task() -> None:
    """Why: a new thread per watched request was paid by every LLM request of a stage."""
    workers = _Workers(idle_s=10)
    first = run_on(workers)
    ready = threading.Event()
    for _ in range(100):  # the first task's thread counts itself idle right after its task returns
        with workers._lock:
            if workers._idle == 1:
                ready.set()
                break
        threading.Event().wait(0.01)
    assert ready.is_set()
    assert run_on(workers) == first


def test_a_task_never_waits_for_a_busy_thread() -> None:
    """A request held by a hung endpoint keeps its thread; the next one gets another at once."""
    workers = _Workers(idle_s=10)
    held = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        held.wait(10)

    workers.submit(hold)
    assert started.wait(10)
    done = threading.Event()
    workers.submit(done.set)
    try:
        assert done.wait(10)
    finally:
        held.set()


def test_an_idle_thread_ends_and_the_next_task_starts_a_new_one() -> None:
    workers = _Workers(idle_s=0.01)
    run_on(workers)
    for _ in range(500):
        with workers._lock:
            if workers._idle == 0:
                break
        threading.Event().wait(0.01)
    with workers._lock:
        assert workers._idle == 0
    done = threading.Event()
    workers.submit(done.set)
    assert done.wait(10)


def test_watched_returns_the_requests_value_and_raises_its_error() -> None:
    assert watched(lambda: 42, lambda: None, 5.0, 5.0) == 42

    def boom() -> int:
        raise ValueError("no")

    try:
        watched(boom, lambda: None, 5.0, 5.0)
    except ValueError as exc:
        assert str(exc) == "no"
    else:
        raise AssertionError("the request's error was not raised")
