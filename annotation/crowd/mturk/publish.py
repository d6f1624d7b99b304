"""Publishing a batch at MTurk: the pilot rule, the pool and block qualifications, the HIT
type and every HIT, each id saved as soon as it exists."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from annotation.crowd.mturk.client import batch_environment, validate_batch
from annotation.crowd.mturk.provider import MTurkProvider
from annotation.crowd.mturk.spend import mturk_block_qualification, mturk_cost_check, mturk_provider
from annotation.errors import ServiceError
from annotation.flow_registry import disjoint_stages
from annotation.models import Batch, BatchStatus, EventAction, Hit, Job, PoolQualification
from annotation.selectors.money.pay import pay_estimate
from annotation.services.events import event_record
from annotation.services.jobs.jobs import Progress, job_create

PROVIDER = "mturk"
TOKEN_MEMORY = timedelta(hours=24)  # how long MTurk remembers a UniqueRequestToken


def _check_custom_qualifications(batch: Batch, provider: MTurkProvider) -> None:
    for custom in batch.qualifications.get("custom", []):
        provider.check_qualification(custom["id"])


def mturk_publish_start(*, batch: Batch) -> Job:
    """Check everything MTurk would refuse and what it would cost, then enqueue publishing."""
    from annotation.crowd.mturk import tasks

    if batch.provider != PROVIDER:
        raise ServiceError(f"batch {batch.pk} uses the {batch.provider!r} provider, not mturk")
    if batch.status != BatchStatus.DRAFT:
        raise ServiceError(f"batch {batch.pk} is {batch.status}, not draft")
    validate_batch(batch)  # production first: MTurk closed on 2026-09-30
    provider = mturk_provider()
    _check_custom_qualifications(batch, provider)
    estimate = mturk_cost_check(batch=batch, provider=provider, unpublished_only=True)
    with transaction.atomic():
        job = job_create(
            name="mturk.publish",
            run=batch.run,
            params={
                "batch": batch.pk,
                "estimate": estimate.describe(),
                "pay": pay_estimate(batch=batch).describe(),
                "total": str(estimate.total),
            },
        )
        event_record(
            action=EventAction.MTURK_PUBLISH_REQUESTED, run=batch.run, batch=batch, data=job.params
        )
        transaction.on_commit(lambda: tasks.mturk_publish_task.delay(job.pk))
    return job


def _pool_qualifications(*, batch: Batch, provider: MTurkProvider) -> dict[str, str]:
    """Both stages' pool qualifications of the run, created once and saved at once."""
    run = batch.run
    environment = batch_environment(batch)
    ids: dict[str, str] = {}
    for stage in disjoint_stages(batch.stage):
        row = PoolQualification.objects.filter(
            run=run, stage=stage, provider=PROVIDER, environment=environment
        ).first()
        qid = provider.ensure_pool_qualification(
            run_id=run.pk,
            stage=stage,
            existing=row.qualification_id if row else None,
            environment=environment,
        )
        if row is None:
            PoolQualification.objects.create(
                run=run,
                stage=stage,
                provider=PROVIDER,
                environment=environment,
                qualification_id=qid,
            )
            event_record(
                action=EventAction.MTURK_POOL_QUALIFICATION_CREATED,
                run=run,
                batch=batch,
                data={"stage": stage, "qualification": qid},
            )
        ids[stage] = qid
    return ids


def mturk_publish_hits(
    *, batch: Batch, provider: MTurkProvider | None = None, progress: Progress | None = None
) -> None:
    """Create the HIT type and every HIT not yet on MTurk, saving each id as soon as it exists."""
    provider = provider or mturk_provider()
    validate_batch(batch)
    if not batch.environment:  # fixed now: every later call for this batch uses it
        batch.environment = batch_environment(batch)
        Batch.objects.filter(pk=batch.pk).update(environment=batch.environment)
    _check_custom_qualifications(batch, provider)
    mturk_cost_check(batch=batch, provider=provider, unpublished_only=True)
    pools = _pool_qualifications(batch=batch, provider=provider)
    others = [qid for stage, qid in pools.items() if stage != batch.stage]
    # Workers blocked from this project (not the whole account) never see its HITs.
    blocked = mturk_block_qualification(environment=batch.environment, create=False)
    if blocked:
        others.append(blocked)
    if not batch.provider_hit_type_id:
        batch.provider_hit_type_id = provider.create_hit_type(batch=batch, exclude_pools=others)
        Batch.objects.filter(pk=batch.pk).update(provider_hit_type_id=batch.provider_hit_type_id)
    todo = list(batch.hits.filter(provider_hit_id="").select_related("batch").order_by("position"))
    for n, hit in enumerate(todo, start=1):
        # The intent is recorded first: a retry past MTurk's 24 h token memory looks the HIT
        # up by its annotation before creating anything.
        now = timezone.now()
        if hit.create_attempted_at is None:
            Hit.objects.filter(pk=hit.pk).update(create_attempted_at=now)
        look_first = hit.create_attempted_at is not None and (
            now - hit.create_attempted_at > TOKEN_MEMORY
        )
        hit_id = provider.create_hit(
            hit=hit, hit_type_id=batch.provider_hit_type_id, look_first=look_first
        )
        Hit.objects.filter(pk=hit.pk).update(provider_hit_id=hit_id)
        if progress:
            progress(100.0 * n / len(todo), f"HIT {n}/{len(todo)} created ({hit_id})")
    event_record(
        action=EventAction.MTURK_HITS_CREATED,
        run=batch.run,
        batch=batch,
        data={"hit_type": batch.provider_hit_type_id, "created": len(todo)},
    )
