"""Celery entry points: thin, take ids, safe to retry (acks_late is set globally)."""

from __future__ import annotations

from celery import group, shared_task

from annotation.services import exports, pairing


@shared_task(name="bison.pairing_prepare")
def pairing_prepare(job_id: int) -> None:
    blocks = pairing.pairing_prepare(job_id=job_id)
    if blocks:
        group(pairing_block.s(job_id, part, start, stop) for part, start, stop in blocks).delay()


@shared_task(name="bison.pairing_block")
def pairing_block(job_id: int, part: int, start: int, stop: int) -> None:
    pairing.pairing_block(job_id=job_id, part=part, start=start, stop=stop)


@shared_task(name="bison.export")
def bison_export(job_id: int) -> None:
    exports.bison_export_write(job_id=job_id)
