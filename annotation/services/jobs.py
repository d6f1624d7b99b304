"""Job rows: the progress record every background job writes and every front end reads."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.models import Job, JobState, Run

# A long step's report: (percent done, message).
Progress = Callable[[float, str], None]

log = logging.getLogger("annotation.jobs")


def job_create(*, name: str, run: Run | None = None, params: dict[str, Any] | None = None) -> Job:
    return Job.objects.create(name=name, run=run, params=params or {})


def job_enqueue(*, job: Job, task: Callable[..., Any]) -> None:
    """Send `task(job.id)` once the surrounding transaction has committed."""
    transaction.on_commit(lambda: task.delay(job.id))


def job_progress(*, job_id: int, progress: float, message: str) -> None:
    # A plain UPDATE, outside any surrounding transaction's rows, so readers see it at once.
    Job.objects.filter(pk=job_id).update(
        progress=round(max(0.0, min(100.0, progress)), 2), message=message[:500]
    )
    log.info("job %s %5.1f%% %s", job_id, progress, message)


def job_start(*, job_id: int, message: str = "started") -> Job:
    Job.objects.filter(pk=job_id, state=JobState.PENDING).update(
        state=JobState.RUNNING, started_at=timezone.now()
    )
    job_progress(job_id=job_id, progress=0.0, message=message)
    return Job.objects.get(pk=job_id)


def job_parts_set(*, job_id: int, total: int) -> None:
    Job.objects.filter(pk=job_id).update(parts_total=total, parts_done=[])


def job_part_done(*, job_id: int, part: int, message: str) -> bool:
    """Record one finished subtask; True for exactly one caller, the one that finished the last.

    Safe to retry: a part already recorded does not count twice.
    """
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if part in job.parts_done:
            return False
        job.parts_done = sorted([*job.parts_done, part])
        job.save(update_fields=["parts_done"])
        done, total = len(job.parts_done), job.parts_total
    job_progress(job_id=job_id, progress=100.0 * done / max(total, 1), message=message)
    return done == total


def job_succeed(*, job_id: int, result: dict[str, Any], message: str = "done") -> None:
    Job.objects.filter(pk=job_id).update(
        state=JobState.SUCCEEDED,
        progress=100.0,
        message=message,
        result=result,
        finished_at=timezone.now(),
    )
    log.info("job %s succeeded: %s", job_id, message)


def job_fail(*, job_id: int, error: str) -> None:
    Job.objects.filter(pk=job_id).update(
        state=JobState.FAILED, error=error, message="failed", finished_at=timezone.now()
    )
    log.warning("job %s failed: %s", job_id, error)


def job_finished_result(*, job_id: int) -> dict[str, Any] | None:
    """The result of a job that already succeeded (a redelivered task then does nothing)."""
    return (
        Job.objects.filter(pk=job_id, state=JobState.SUCCEEDED)
        .values_list("result", flat=True)
        .first()
    )
