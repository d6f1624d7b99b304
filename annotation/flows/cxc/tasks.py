"""Celery entry points of the CxC flow: thin, take ids, safe to retry."""

from __future__ import annotations

from annotation.services.jobs.jobs import job_step
from config.celery import app


@app.task(name="cxc.sample")
@job_step
def cxc_sample_task(job_id: int) -> None:
    from annotation.flows.cxc.services.sampling import cxc_sample_job

    cxc_sample_job(job_id=job_id)
