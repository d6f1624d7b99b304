"""The registry of job steps: for each Job.name, the Celery tasks that run it (so recovery can
re-send a lost step) and the run status the job holds while it works (so a job that ends
without finishing releases its run)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from annotation.models import Job


def _part_only(job: Job, part: int) -> list[Any]:
    return [part]


@dataclass(frozen=True)
class JobSteps:
    """How to re-send a job's steps: Celery task names, each taking the job id first."""

    name: str  # Job.name
    start: str  # the first (or only) step
    part: str | None = None  # one part of a split job: (job_id, *part_args(job, part))
    finish: str | None = None  # the step after the last part
    part_args: Callable[[Job, int], list[Any]] = field(default=_part_only)
    # The run's status while the job works: a job that is cancelled or fails fails the run, so
    # it can restart.
    busy_status: str | None = None


_STEPS: dict[str, JobSteps] = {}


def job_steps_register(steps: JobSteps) -> None:
    """Called from an app's `ready()` for each job name it creates."""
    _STEPS[steps.name] = steps


def job_steps(name: str) -> JobSteps | None:
    return _STEPS.get(name)


def job_names_registered() -> list[str]:
    return list(_STEPS)
