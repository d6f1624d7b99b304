"""Celery entry points of the ECCV Caption flow: thin, take ids, safe to retry. `job_step`
skips a step of a job that has ended and keeps the job's heartbeat while one runs."""

from __future__ import annotations

from celery import group

from annotation.flows.eccv.services import proposal_job
from annotation.services.jobs.jobs import job_step
from config.celery import app


@app.task(name="eccv.propose_prepare")
@job_step
def eccv_propose_prepare_task(job_id: int) -> None:
    parts = proposal_job.eccv_propose_prepare(job_id=job_id)
    if parts:
        group(eccv_propose_part_task.s(job_id, part) for part in parts).delay()


@app.task(name="eccv.propose_part")
@job_step
def eccv_propose_part_task(job_id: int, part: int) -> None:
    try:
        proposal_job.eccv_propose_part(job_id=job_id, part=part)
    except Exception as exc:
        proposal_job.eccv_propose_fail(
            job_id=job_id, error=f"part {part}: {type(exc).__name__}: {exc}"
        )
        raise


@app.task(name="eccv.propose_finish")
@job_step
def eccv_propose_finish_task(job_id: int) -> None:
    """Sent by recovery when every annotator ranked but the job never closed."""
    try:
        proposal_job.eccv_propose_finish(job_id=job_id)
    except Exception as exc:
        proposal_job.eccv_propose_fail(job_id=job_id, error=f"finish: {type(exc).__name__}: {exc}")
        raise
