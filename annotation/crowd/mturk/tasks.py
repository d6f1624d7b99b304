"""MTurk's Celery entry points: thin, take ids, safe to retry. Task names are kept as they
were before the provider had its own package (queued messages carry them)."""

from __future__ import annotations

from annotation.services.jobs.jobs import job_step
from config.celery import app


@app.task(name="mturk.publish")
@job_step
def mturk_publish_task(job_id: int) -> None:
    from annotation.services.runs.batches import batch_publish_job

    batch_publish_job(job_id=job_id)


@app.task(name="mturk.sync_open")
def mturk_sync_open_task() -> None:
    """What the periodic `crowd.sync_open` does, for messages queued under the old name."""
    from annotation.tasks import crowd_sync_open_task

    crowd_sync_open_task()
