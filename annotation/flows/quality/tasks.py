"""Celery entry points of the caption-quality flow: thin, take ids, safe to retry."""

from __future__ import annotations

from celery import shared_task

from annotation.services.jobs import job_step


@shared_task(name="quality.export")
@job_step
def quality_export(job_id: int) -> None:
    from annotation.flows.quality.services.export import quality_export_write

    quality_export_write(job_id=job_id)
