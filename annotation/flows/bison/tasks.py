"""Celery entry points of the BISON flow: thin, take ids, safe to retry. `job_step` skips a
step of a job that has ended and keeps the job's heartbeat while one runs."""

from __future__ import annotations

from celery import group

from annotation.flows.bison.services import pairing
from annotation.services.jobs.jobs import job_step
from config.celery import app


@app.task(name="bison.pairing_prepare")
@job_step
def pairing_prepare_task(job_id: int) -> None:
    try:
        blocks = pairing.pairing_prepare(job_id=job_id)
    except Exception as exc:
        pairing.pairing_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
        raise
    if blocks:
        group(
            pairing_block_task.s(job_id, part, start, stop) for part, start, stop in blocks
        ).delay()


@app.task(name="bison.pairing_block")
@job_step
def pairing_block_task(job_id: int, part: int, start: int, stop: int) -> None:
    try:
        pairing.pairing_block(job_id=job_id, part=part, start=start, stop=stop)
    except Exception as exc:
        pairing.pairing_fail(job_id=job_id, error=f"block {part}: {type(exc).__name__}: {exc}")
        raise


@app.task(name="bison.pairing_finish")
@job_step
def pairing_finish_task(job_id: int) -> None:
    """Sent by recovery when every block is done but the job never closed."""
    try:
        pairing.pairing_finish(job_id=job_id)
    except Exception as exc:
        pairing.pairing_fail(job_id=job_id, error=f"finish: {type(exc).__name__}: {exc}")
        raise
