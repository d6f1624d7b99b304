"""Scale-out on paper: a split job's time over N workers, from its parts' times at one.

A split job (stage 1's blocks, the ECCV proposal's models, the encoder's chunks) is a serial
prepare, parts that Celery hands to whichever worker is free in the order they were sent,
and a serial finish. With the per-part times measured on one worker (`Job.timings`, see
annotation/services/jobs/job_timing.py), the model is

    T(N) = before + makespan(parts, N) + after

where `before` is the job's creation to the prepare's end (the prepare's dispatch and the
prepare), `after` is the last part's end to the job's end (the finish, and its dispatch when
it is a task of its own), and the makespan is list scheduling in dispatch order: each part
goes to the worker that becomes free first, costs the per-part dispatch overhead plus its
duration, and a worker's first part also pays the one-time setup (a model load).

What it leaves out, by design: parts' durations are taken as they were at one worker, so
workers that share cores, memory bandwidth, the database or the broker (all of them on one
machine) make the real parts slower than predicted; the gap between the prediction and a
measured run at N workers is that contention (compare the parts' durations of the two runs).
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.errors import InputError


@dataclass(frozen=True)
class JobProfile:
    """A split job's measured times in seconds; parts in dispatch order."""

    before: float
    parts: tuple[float, ...]
    overhead: float = 0.0
    setup: float = 0.0
    after: float = 0.0

    @property
    def serial(self) -> float:
        return self.before + self.after


def makespan(
    durations: Sequence[float], workers: int, *, overhead: float = 0.0, setup: float = 0.0
) -> float:
    """When the last part ends if `workers` free workers take the parts in order, each the
    next part when it becomes free (ties to the lowest-numbered worker)."""
    if workers < 1:
        raise InputError(f"needs at least one worker, got {workers}", field="workers")
    if any(d < 0 for d in durations) or overhead < 0 or setup < 0:
        raise InputError("durations, overhead and setup cannot be negative", field="durations")
    free = [(0.0, w, True) for w in range(workers)]  # (free at, worker, not yet used)
    heapq.heapify(free)
    end = 0.0
    for duration in durations:
        at, worker, fresh = heapq.heappop(free)
        done = at + overhead + (setup if fresh else 0.0) + duration
        end = max(end, done)
        heapq.heappush(free, (done, worker, False))
    return end


def predict(profile: JobProfile, workers: int) -> float:
    """T(N): the serial steps plus the parts' makespan over `workers`."""
    return (
        profile.before
        + makespan(profile.parts, workers, overhead=profile.overhead, setup=profile.setup)
        + profile.after
    )


def amdahl_limit(profile: JobProfile) -> float:
    """The speed-up over one worker that no N exceeds: the serial steps stay, and the job
    cannot end before its longest part (with its dispatch and a worker's setup) has run."""
    longest = max(profile.parts, default=0.0) + profile.overhead + profile.setup
    return predict(profile, 1) / (profile.serial + longest)


def _field(record: Mapping[str, Any], name: str, where: str, job: str) -> float:
    value = record.get(name) if isinstance(record, Mapping) else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InputError(f"needs a number, got {value!r}", file=job, record=where, field=name)
    return float(value)


def profile_from_timings(
    timings: Mapping[str, Any], *, created: float, finished: float, job: str = "job"
) -> JobProfile:
    """The profile of one finished run of a split job from its `Job.timings` record and its
    creation and end (Unix seconds); `job` names it in errors."""
    parts = timings.get("parts") if isinstance(timings, Mapping) else None
    if not isinstance(parts, Mapping) or not parts:
        raise InputError("no parts were timed (did the job run in Celery tasks?)", file=job)
    for step in ("prepare", "finish"):
        if not isinstance(timings.get(step), Mapping):
            raise InputError("not timed", file=job, field=step)
    prepare_end = _field(timings["prepare"], "end", "prepare", job)
    records = []
    for key in sorted(parts, key=lambda k: int(k) if str(k).isdigit() else -1):
        if not str(key).isdigit():
            raise InputError("a part's key must be its number", file=job, record=str(key))
        record = parts[key]
        where = f"part {key}"
        start, end = _field(record, "start", where, job), _field(record, "end", where, job)
        setup = _field(record, "setup", where, job) if "setup" in record else 0.0
        if end < start or setup > end - start:
            raise InputError("ends before it starts", file=job, record=f"part {key}")
        records.append((start, end, setup, str(record.get("worker", ""))))
    # A part's dispatch overhead: from its worker's previous phase (or the prepare, whichever
    # ended later) to its start; the median, so one slow hand-over does not set every part's.
    gaps = []
    for start, _, _, worker in records:
        before = [e for s, e, _, w in records if w == worker and e <= start]
        gaps.append(max(start - max([prepare_end, *before]), 0.0))
    setups = [s for _, _, s, _ in records if s > 0]
    last = max(end for _, end, _, _ in records)
    if finished < last or prepare_end < created:
        raise InputError("the job's creation and end do not enclose its steps", file=job)
    return JobProfile(
        before=prepare_end - created,
        parts=tuple(end - start - setup for start, end, setup, _ in records),
        overhead=statistics.median(gaps),
        setup=statistics.median(setups) if setups else 0.0,
        after=finished - last,
    )
