"""Run one function over many items in threads, yielding each result as it finishes.

Why not a bare ``with ThreadPoolExecutor``: when the consumer stops early (the stage driver's
dead-endpoint breaker closes the generator), ``__exit__`` would still run every queued item. Here
closing the generator cancels what has not started and waits only for what is in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], items: Iterable[T], workers: int, name: str) -> Iterator[tuple[T, R]]:
    """(item, fn(item)) in completion order; closing the iterator cancels items not yet started."""
    pool = ThreadPoolExecutor(max(workers, 1), thread_name_prefix=name)
    try:
        futures = {pool.submit(fn, item): item for item in items}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
