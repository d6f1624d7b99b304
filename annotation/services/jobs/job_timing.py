"""When each part of a split job ran: the record `Job.timings` that the scale-out model
(`pipeline/scaleout.py`) reads to predict the job's time over more workers.

A split job is a serial prepare step, parts sent as Celery tasks, and a serial finish (run
by the last part's task, or sent as a task of its own). The job's own bookkeeping calls
mark the phase boundaries, so no job's code times itself: `job_step` opens a phase when a
task starts in this process; `job_parts_set` closes it as the prepare, `job_part_done` as
part n (and opens the next phase: the finish, when the same task goes on to it), and
`job_succeed` closes the finish. Times are Unix seconds (`time.time()`, the clock
`created_at`/`finished_at` use), so gaps between phases on different machines carry their
clocks' skew; durations within one phase do not.

    {"prepare": {"start": t, "end": t, "worker": "host:pid"},
     "parts": {"0": {"start": t, "end": t, "worker": "host:pid", "setup": s}, ...},
     "finish": {"start": t, "end": t, "worker": "host:pid"}}

`setup` is the part's one-time per-process cost (the encoder's model load, `phase_setup`),
which a worker pays on its first part only.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Phase:
    start: float = field(default_factory=time.time)
    setup: float = 0.0


# The phase the current task is in; None outside a job's task (a service called directly).
_PHASE: ContextVar[_Phase | None] = ContextVar("job_phase", default=None)


def worker_name() -> str:
    """The process that ran a phase: a solo-pool Celery worker is one process."""
    return f"{socket.gethostname()}:{os.getpid()}"


@contextmanager
def phase_open() -> Iterator[None]:
    """A job's task runs in here (`job_step`): its phases are timed from now."""
    token = _PHASE.set(_Phase())
    try:
        yield
    finally:
        _PHASE.reset(token)


@contextmanager
def phase_setup() -> Iterator[None]:
    """Time a one-time per-process cost inside the current phase (loading a model the
    worker keeps for its later parts)."""
    started = time.time()
    try:
        yield
    finally:
        phase = _PHASE.get()
        if phase is not None:
            phase.setup += time.time() - started


def phase_close(*, setup: bool = False) -> dict[str, Any] | None:
    """The current phase's record, ended now, and the next phase opened; None outside a
    job's task (nothing is recorded then)."""
    phase = _PHASE.get()
    if phase is None:
        return None
    now = time.time()
    record: dict[str, Any] = {
        "start": round(phase.start, 4),
        "end": round(now, 4),
        "worker": worker_name(),
    }
    if setup:
        record["setup"] = round(phase.setup, 4)
    phase.start, phase.setup = now, 0.0
    return record


def timings_with(
    timings: dict[str, Any], record: dict[str, Any] | None, *, step: str, part: int = -1
) -> dict[str, Any]:
    """`timings` with `record` as the "prepare" or "finish" step, or as part `part`."""
    if record is None:
        return timings
    if step == "part":
        return {**timings, "parts": {**timings.get("parts", {}), str(part): record}}
    return {**timings, step: record}
