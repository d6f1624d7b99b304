"""A job's work done beside its main thread: on a machine with a few cores, the database
streaming rows, numpy fitting a model and Arrow writing text can run at once (issue 32: the
CxC export). One helper thread per job; what it runs must leave the GIL for most of its time
(numpy's and Arrow's kernels, file writes, waits on the database) or nothing is gained.

Reads in the helper thread go through a database connection of their own. Another
connection does not see the rows of an open transaction, so inside one (a caller's atomic
block, a test's) and off PostgreSQL those reads run in the calling thread, in order.
`CROWDVL_EXPORT_BESIDE` off runs every step in order (less memory held at once)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.db import connection, connections

P = ParamSpec("P")
T = TypeVar("T")


class InOrder(Executor):
    """`submit` runs the call here and now (settings.CROWDVL_EXPORT_BESIDE off): its future
    is done, holding the value or the error that `result()` raises."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as exc:  # raised by `result()`, as from a thread
            done.set_exception(exc)
        return done


@contextmanager
def beside_pool() -> Iterator[Executor]:
    """One helper thread for the block (leaving the block waits for what it was given), or
    every step in order where settings.CROWDVL_EXPORT_BESIDE is off."""
    if not settings.CROWDVL_EXPORT_BESIDE:
        yield InOrder()
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="job-beside") as pool:
        yield pool


def reads_beside(
    pool: Executor, read: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> Future[T]:
    """`read(*args, **kwargs)` in `pool`'s thread on a connection of its own (closed when it
    returns), or here and now where another connection would not see the same rows."""
    if isinstance(pool, InOrder) or connection.in_atomic_block or connection.vendor != "postgresql":
        return InOrder().submit(read, *args, **kwargs)
    return pool.submit(_on_own_connection, partial(read, *args, **kwargs))


def _on_own_connection(read: Callable[[], T]) -> T:
    try:
        return read()
    finally:
        connections.close_all()  # this thread's connections only
