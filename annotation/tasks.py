"""Celery entry points: thin, take ids, safe to retry (acks_late is set globally)."""

from __future__ import annotations

from celery import group, shared_task

from annotation.services import exports, pairing


@shared_task(name="bison.pairing_prepare")
def pairing_prepare(job_id: int) -> None:
    try:
        blocks = pairing.pairing_prepare(job_id=job_id)
    except Exception as exc:
        pairing.pairing_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
        raise
    if blocks:
        group(pairing_block.s(job_id, part, start, stop) for part, start, stop in blocks).delay()


@shared_task(name="bison.pairing_block")
def pairing_block(job_id: int, part: int, start: int, stop: int) -> None:
    try:
        pairing.pairing_block(job_id=job_id, part=part, start=start, stop=stop)
    except Exception as exc:
        pairing.pairing_fail(job_id=job_id, error=f"block {part}: {type(exc).__name__}: {exc}")
        raise


@shared_task(name="bison.export")
def bison_export(job_id: int) -> None:
    exports.bison_export_write(job_id=job_id)


@shared_task(name="mturk.publish")
def mturk_publish(job_id: int) -> None:
    from annotation.services.mturk import mturk_publish_job

    mturk_publish_job(job_id=job_id)


@shared_task(name="mturk.sync_open")
def mturk_sync_open() -> None:
    from annotation.services.mturk import mturk_sync_open as sync

    sync()


@shared_task(name="eccv.propose_prepare")
def eccv_propose_prepare(job_id: int) -> None:
    from annotation.services import eccv

    parts = eccv.eccv_propose_prepare(job_id=job_id)
    group(eccv_propose_part.s(job_id, part) for part in parts).delay()


@shared_task(name="eccv.propose_part")
def eccv_propose_part(job_id: int, part: int) -> None:
    from annotation.services import eccv

    try:
        eccv.eccv_propose_part(job_id=job_id, part=part)
    except Exception as exc:
        eccv.eccv_propose_fail(job_id=job_id, error=f"part {part}: {type(exc).__name__}: {exc}")
        raise


@shared_task(name="eccv.export")
def eccv_export(job_id: int) -> None:
    from annotation.services.eccv_export import eccv_export_write

    eccv_export_write(job_id=job_id)


@shared_task(name="assignments.auto_approve")
def assignments_auto_approve() -> None:
    from annotation.services.reviews import assignments_auto_approve as approve

    approve()
