"""Prolific's Celery entry points: thin, take ids, safe to retry."""

from __future__ import annotations

from annotation.services.jobs.jobs import job_step
from config.celery import app


@app.task(name="prolific.publish")
@job_step
def prolific_publish_task(job_id: int) -> None:
    from annotation.services.runs.batches import batch_publish_job

    batch_publish_job(job_id=job_id)
