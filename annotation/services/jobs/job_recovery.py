"""Jobs that recover by themselves: a pending or running job with no sign of life (heartbeat,
progress) for CROWDVL_JOB_STALL_SECONDS lost its worker (kill -9, a crashed machine) or its
queued messages (a broker restart). Its missing steps are re-sent from what the Job row
records: the first step if it never split the work, the parts not done, or the finishing step.
Every step is idempotent and the finishing step runs under `job_finishing`, so a re-sent step
that races a late original does no harm. Staff resume or cancel a job by hand the same way."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.models import EventAction, Job, JobState
from annotation.services.events import event_record
from annotation.services.jobs.job_steps import (
    JobSteps,
    job_names_registered,
    job_steps,
    job_steps_register,
)
from annotation.services.jobs.jobs import LIVE, job_run_release

log = logging.getLogger("annotation.jobs")


def _plan(job: Job, steps: JobSteps) -> list[tuple[str, list[Any]]]:
    if steps.part is None or job.parts_total == 0:
        return [(steps.start, [job.pk])]
    done = set(job.parts_done)
    missing = [p for p in range(job.parts_total) if p not in done]
    if missing:
        return [(steps.part, [job.pk, *steps.part_args(job, p)]) for p in missing]
    return [(steps.finish or steps.start, [job.pk])]


def _send(plan: list[tuple[str, list[Any]]]) -> None:
    # The app is loaded on first use (config/__init__.py); a web process or command may not
    # have imported the tasks module that registers a step, so every app's is found first.
    from config import celery_app

    celery_app.autodiscover_tasks(force=True)
    for name, args in plan:
        # Through the registered task, so in-process (eager) settings apply as for .delay().
        celery_app.tasks[name].apply_async(args=tuple(args))


def _last_seen(job: Job) -> Any:
    return job.heartbeat_at or job.started_at or job.created_at


def _live_job_locked(job_id: int, action: str) -> Job:
    """The job's row, locked, if it is pending or running (inside a transaction)."""
    job = (
        Job.objects.select_for_update(of=("self",)).select_related("run").filter(pk=job_id).first()
    )
    if job is None:
        raise ServiceError(f"no job {job_id}")
    if job.state not in LIVE:
        raise ServiceError(
            f"job {job_id} is {job.state}: only a pending or running job can be {action}"
        )
    return job


def job_resume(
    *, job_id: int, reason: str, by: str = "", stale_before: Any = None
) -> list[tuple[str, list[Any]]]:
    """Re-send the steps a live job is missing (sent after commit); the steps sent. With
    `stale_before`, a job that showed life since then is left alone (returns [])."""
    with transaction.atomic():
        job = _live_job_locked(job_id, "resumed")
        if stale_before is not None and _last_seen(job) >= stale_before:
            return []
        steps = job_steps(job.name)
        if steps is None:
            raise ServiceError(f"job {job_id} ({job.name}) has no known steps to resume")
        plan = _plan(job, steps)
        sent = sorted({name for name, _ in plan})
        Job.objects.filter(pk=job_id).update(
            heartbeat_at=timezone.now(),
            resumed=job.resumed + 1,
            message=f"resumed ({reason}): {len(plan)} step(s) re-sent"[:500],
        )
        event_record(
            action=EventAction.JOB_RESUMED,
            run=job.run,
            data={"job": job_id, "reason": reason, "by": by, "steps": sent, "count": len(plan)},
        )
        transaction.on_commit(lambda: _send(plan))
    log.warning("job %s resumed (%s): %d step(s) of %s", job_id, reason, len(plan), sent)
    return plan


def jobs_recover(*, stall_seconds: float | None = None) -> list[int]:
    """Resume every live job silent for `stall_seconds` (CROWDVL_JOB_STALL_SECONDS): the
    periodic `jobs.recover`. Returns the ids resumed."""
    stall = stall_seconds if stall_seconds is not None else settings.CROWDVL_JOB_STALL_SECONDS
    cutoff = timezone.now() - timedelta(seconds=stall)
    stalled = list(
        Job.objects.filter(state__in=LIVE, name__in=job_names_registered())
        .annotate(seen=Coalesce("heartbeat_at", "started_at", "created_at"))
        .filter(seen__lt=cutoff)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    resumed = []
    for job_id in stalled:
        try:
            if job_resume(job_id=job_id, reason="stalled", stale_before=cutoff):
                resumed.append(job_id)
        except ServiceError as exc:  # ended between the query and the lock
            log.info("job %s not resumed: %s", job_id, exc)
    return resumed


def job_cancel(*, job_id: int, by: str) -> Job:
    """Stop a live job: its remaining steps do nothing; a run it kept busy fails, so it can
    be started again."""
    with transaction.atomic():
        job = _live_job_locked(job_id, "cancelled")
        Job.objects.filter(pk=job_id).update(
            state=JobState.CANCELLED,
            message=f"cancelled by {by or 'staff'}"[:500],
            finished_at=timezone.now(),
        )
        job_run_release(job=job, error=f"job {job_id} cancelled")
        event_record(action=EventAction.JOB_CANCELLED, run=job.run, data={"job": job_id, "by": by})
    job.refresh_from_db()
    return job


__all__ = [
    "JobSteps",
    "job_cancel",
    "job_resume",
    "job_steps",
    "job_steps_register",
    "jobs_recover",
]
