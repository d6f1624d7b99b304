"""Job rows: the progress record every background job writes and every front end reads."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from annotation.models import Job, JobState, Run, RunStatus
from annotation.paths import paths_hidden
from annotation.services.jobs.job_steps import job_steps
from annotation.services.jobs.job_timing import phase_close, phase_open, timings_with
from annotation.services.notifications import owner_notify
from annotation.services.runs.runs import run_set_status

if TYPE_CHECKING:
    from celery import Task

# A long step's report: (percent done, message).
Progress = Callable[[float, str], None]

log = logging.getLogger("annotation.jobs")

# A job in one of these states still has steps to run; the others are final.
LIVE = (JobState.PENDING, JobState.RUNNING)
F = TypeVar("F", bound=Callable[..., Any])


def job_create(*, name: str, run: Run | None = None, params: dict[str, Any] | None = None) -> Job:
    return Job.objects.create(name=name, run=run, params=params or {})


def job_enqueue(*, job: Job, task: Task[..., Any]) -> None:
    """Send `task(job.id)` once the surrounding transaction has committed."""
    transaction.on_commit(lambda: task.delay(job.id))


def job_progress(*, job_id: int, progress: float, message: str) -> None:
    # A plain UPDATE, outside any surrounding transaction's rows, so readers see it at once.
    Job.objects.filter(pk=job_id).update(
        progress=round(max(0.0, min(100.0, progress)), 2),
        message=message[:500],
        heartbeat_at=timezone.now(),
    )
    log.info("job %s %5.1f%% %s", job_id, progress, message)


def job_start(*, job_id: int, message: str = "started") -> Job:
    now = timezone.now()
    Job.objects.filter(pk=job_id, state=JobState.PENDING).update(
        state=JobState.RUNNING, started_at=now, heartbeat_at=now
    )
    job_progress(job_id=job_id, progress=0.0, message=message)
    return Job.objects.get(pk=job_id)


def job_parts_set(*, job_id: int, total: int) -> bool:
    """Split the job into `total` parts; False if an earlier run of the same step already did
    (a resumed or redelivered first step then sends nothing)."""
    # The prepare step ends here (its timing is what the scale-out model calls serial).
    prepare = timings_with({}, phase_close(), step="prepare")
    return bool(
        Job.objects.filter(pk=job_id, parts_total=0, state__in=LIVE).update(
            parts_total=total, parts_done=[], timings=prepare
        )
    )


def job_part_done(*, job_id: int, part: int, message: str) -> bool:
    """Record one finished subtask; True for exactly one caller, the one that finished the last.

    Safe to retry: a part already recorded does not count twice.
    """
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if part in job.parts_done or job.state not in LIVE:
            return False
        job.parts_done = sorted([*job.parts_done, part])
        job.timings = timings_with(job.timings, phase_close(setup=True), step="part", part=part)
        job.save(update_fields=["parts_done", "timings"])
        done, total = len(job.parts_done), job.parts_total
    job_progress(job_id=job_id, progress=100.0 * done / max(total, 1), message=message)
    return done == total


def job_succeed(*, job_id: int, result: dict[str, Any], message: str = "done") -> None:
    # Only a live job ends: a cancelled job stays cancelled, a finished one is not finished twice.
    extra: dict[str, Any] = {}
    timings = Job.objects.filter(pk=job_id).values_list("timings", flat=True).first()
    if timings and "parts" in timings:  # a split job: this step was its finish
        # Every part is done, so no other step writes the timings now.
        extra["timings"] = timings_with(timings, phase_close(), step="finish")
    Job.objects.filter(pk=job_id, state__in=LIVE).update(
        state=JobState.SUCCEEDED,
        progress=100.0,
        message=message,
        result=result,
        finished_at=timezone.now(),
        **extra,
    )
    log.info("job %s succeeded: %s", job_id, message)


def job_fail(*, job_id: int, error: str) -> None:
    failed = Job.objects.filter(pk=job_id, state__in=LIVE).update(
        state=JobState.FAILED, error=error, message="failed", finished_at=timezone.now()
    )
    log.warning("job %s failed: %s", job_id, error)
    if failed:
        job = Job.objects.get(pk=job_id)
        body = paths_hidden(error)  # the researcher's mail; the log above keeps the full text
        owner_notify(run_id=job.run_id, subject=f"job {job.name} #{job_id} failed", body=body)


def job_run_release(*, job: Job, error: str) -> None:
    """A job that ended without finishing fails the run it kept busy, so the run can restart."""
    steps = job_steps(job.name)
    run = job.run
    if run is None or steps is None or steps.busy_status is None:
        return
    run.refresh_from_db(fields=["status"])
    if run.status == steps.busy_status:
        run_set_status(run=run, status=RunStatus.FAILED, error=error)


def job_fail_unexpected(*, job_id: int, exc: BaseException) -> None:
    """A step raised what it did not handle: the job ends failed with the error on its page
    (recovery never re-sends a failed job's steps) and its run is released. Where even that
    cannot be written (the database is down), the job stays live for recovery, which re-sends
    only steps that are safe to repeat."""
    error = f"{type(exc).__name__}: {exc}"
    try:
        job = Job.objects.select_related("run").filter(pk=job_id, state__in=LIVE).first()
        if job is None:  # the step failed the job itself, or it was cancelled
            return
        job_fail(job_id=job_id, error=error[:5000])
        job_run_release(job=job, error=error[:2000])
    except DatabaseError as db_error:
        log.error("job %s: failure not recorded (%s): %s", job_id, db_error, error)


def job_finished_result(*, job_id: int) -> dict[str, Any] | None:
    """The result of a job that already succeeded (a redelivered task then does nothing)."""
    return (
        Job.objects.filter(pk=job_id, state=JobState.SUCCEEDED)
        .values_list("result", flat=True)
        .first()
    )


def job_live(*, job_id: int) -> bool:
    """Whether the job still has steps to run (not succeeded, failed or cancelled)."""
    return Job.objects.filter(pk=job_id, state__in=LIVE).exists()


@contextmanager
def job_finishing(*, job_id: int) -> Iterator[bool]:
    """The transaction of a job's finishing step, holding the job's row: yields False when the
    job is no longer running (finished by another delivery, failed or cancelled), so the
    finishing writes and `job_succeed` happen once, together or not at all."""
    with transaction.atomic():
        state = (
            Job.objects.select_for_update()
            .filter(pk=job_id)
            .values_list("state", flat=True)
            .first()
        )
        yield state == JobState.RUNNING


def _beat(job_id: int) -> None:
    try:
        Job.objects.filter(pk=job_id, state__in=LIVE).update(heartbeat_at=timezone.now())
    except DatabaseError as exc:  # a database restart must not kill the step it watches
        log.warning("job %s heartbeat not written: %s", job_id, exc)


@contextmanager
def job_heartbeat(*, job_id: int, every: float | None = None) -> Iterator[None]:
    """Write the job's heartbeat now and every `every` seconds (CROWDVL_JOB_HEARTBEAT_SECONDS)
    from a thread while the body runs, so recovery can tell a long step from a dead worker."""
    _beat(job_id)
    if settings.CELERY_TASK_ALWAYS_EAGER:  # in-process: the caller itself is the sign of life
        yield
        return
    interval = every or settings.CROWDVL_JOB_HEARTBEAT_SECONDS
    stop = threading.Event()

    def loop() -> None:
        try:
            while not stop.wait(interval):
                _beat(job_id)
        finally:
            connection.close()  # the thread's own connection

    thread = threading.Thread(target=loop, name=f"job-{job_id}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=interval + 10)


def job_step(fn: F) -> F:
    """Wrap a Celery task body whose first argument is a job id: a step of a job that has
    ended (a redelivered or resumed message) does nothing; a running one keeps a heartbeat;
    one that raises ends the job failed (`job_fail_unexpected`)."""

    @functools.wraps(fn)
    def step(job_id: int, *args: Any, **kwargs: Any) -> Any:
        if not job_live(job_id=job_id):
            log.info("job %s has ended; %s skipped", job_id, fn.__name__)
            return None
        with job_heartbeat(job_id=job_id), phase_open():
            try:
                return fn(job_id, *args, **kwargs)
            except Exception as exc:
                job_fail_unexpected(job_id=job_id, exc=exc)
                raise

    return step  # type: ignore[return-value]
