"""Celery entry points of the encoder job: thin, take ids, safe to retry."""

from __future__ import annotations

from celery import group

from annotation.services.jobs.jobs import job_step
from config.celery import app


@app.task(name="encoders.encode_prepare")
@job_step
def encode_prepare_task(job_id: int) -> None:
    from annotation.encoders import services

    try:
        parts = services.encode_prepare(job_id=job_id)
    except Exception as exc:
        services.encode_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
        raise
    if parts:
        group(encode_part_task.s(job_id, part) for part in parts).delay()


@app.task(name="encoders.encode_part")
@job_step
def encode_part_task(job_id: int, part: int) -> None:
    from annotation.encoders import services

    try:
        last = services.encode_part(job_id=job_id, part=part)
    except Exception as exc:
        services.encode_fail(job_id=job_id, error=f"chunk {part}: {type(exc).__name__}: {exc}")
        raise
    if last:
        encode_finish_task.delay(job_id)


@app.task(name="encoders.encode_finish")
@job_step
def encode_finish_task(job_id: int) -> None:
    from annotation.encoders import services

    try:
        services.encode_finish(job_id=job_id)
    except Exception as exc:
        services.encode_fail(job_id=job_id, error=f"finish: {type(exc).__name__}: {exc}")
        raise
