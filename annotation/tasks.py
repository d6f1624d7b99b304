"""Celery entry points of the core: thin, take ids, safe to retry (acks_late is set globally).
Each flow has its own `tasks.py` beside its services."""

from __future__ import annotations

import logging

from annotation.services.jobs.jobs import job_step
from config.celery import app

logger = logging.getLogger(__name__)


@app.task(name="crowd.sync_open")
def crowd_sync_open_task() -> None:
    """Periodic: every remote provider brings in its open batches' results; then HITs a
    provider would not grow get their items in a new HIT."""
    from annotation.providers import providers
    from annotation.services.work.reoffer import hits_reoffer_all

    for provider in providers():
        if not provider.remote:
            continue
        try:
            provider.sync_open()
        except Exception:  # noqa: BLE001 - one provider failing must not stop the others
            logger.exception("synchronising %s failed", provider.name)
    hits_reoffer_all()


@app.task(name="assignments.auto_approve")
def assignments_auto_approve_task() -> None:
    from annotation.services.work.reviews import assignments_auto_approve as approve

    approve()


@app.task(name="datasets.import")
@job_step
def dataset_import_task(job_id: int) -> None:
    from annotation.services.datasets.dataset_jobs import dataset_import_job

    dataset_import_job(job_id=job_id)


@app.task(name="images.cache")
@job_step
def images_cache_task(job_id: int) -> None:
    from annotation.services.datasets.images import images_cache_job

    images_cache_job(job_id=job_id)


@app.task(name="exports.write")
@job_step
def export_write_task(job_id: int) -> None:
    """Every flow's export job (its build is the flow's `ExportSpec`)."""
    from annotation.services.release.export_jobs import export_job_write

    export_job_write(job_id=job_id)


@app.task(name="jobs.recover")
def jobs_recover_task() -> None:
    """Periodic: re-send the missing steps of jobs silent for CROWDVL_JOB_STALL_SECONDS."""
    from annotation.services.jobs.job_recovery import jobs_recover as recover

    recover()


@app.task(name="notify.owner")
def owner_notify_task(run_id: int, subject: str, body: str) -> None:
    from annotation.services.notifications import owner_notify_send

    owner_notify_send(run_id=run_id, subject=subject, body=body)


@app.task(name="exports.bundle")
@job_step
def export_bundle_task(job_id: int) -> None:
    """A release bundle of one export version (the exports page's and API's button)."""
    from annotation.services.release.release_bundle import export_bundle_job

    export_bundle_job(job_id=job_id)
