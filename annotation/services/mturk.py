"""MTurk publishing, worker arrival and synchronisation. Remote calls go through the provider
(annotation/crowd/mturk.py); this module keeps the database in step with them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.crowd import provider_for
from annotation.crowd.mturk import (
    CostEstimate,
    MTurkError,
    MTurkProvider,
    estimate_cost,
    validate_batch,
)
from annotation.errors import AnswerError, PoolConflict, ServiceError
from annotation.flows import disjoint_stages
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    Event,
    Hit,
    HitStatus,
    Job,
    PoolMembership,
    PoolQualification,
)
from annotation.services.assignments import (
    assignment_mark,
    assignment_submit,
    pool_join,
    worker_get_or_create,
)
from annotation.services.events import event_record
from annotation.services.jobs import Progress, job_create
from pipeline.errors import InputError
from pipeline.mturk_xml import parse_answer_xml

PROVIDER = "mturk"


def mturk_provider() -> MTurkProvider:
    provider = provider_for(PROVIDER)
    assert isinstance(provider, MTurkProvider)
    return provider


# --- cost ------------------------------------------------------------------------------------


def mturk_cost_estimate(*, batch: Batch, unpublished_only: bool = False) -> CostEstimate:
    hits = batch.hits.all()
    if unpublished_only:
        hits = hits.filter(provider_hit_id="")
    return estimate_cost(
        hits=hits.count(), assignments_per_hit=batch.assignments_per_hit, reward=batch.reward
    )


def mturk_cost_check(
    *, batch: Batch, provider: MTurkProvider, unpublished_only: bool
) -> CostEstimate:
    """Refuse a batch that would exceed the configured budget or the account balance."""
    estimate = mturk_cost_estimate(batch=batch, unpublished_only=unpublished_only)
    budget = settings.CROWDVL_MTURK_BUDGET
    if budget is not None and estimate.total > Decimal(budget):
        raise ServiceError(
            f"batch {batch.pk} would cost ${estimate.total}, over the budget of ${budget} "
            f"(CROWDVL_MTURK_BUDGET): {estimate.describe()}"
        )
    balance = provider.account_balance()
    if estimate.total > balance:
        raise ServiceError(
            f"batch {batch.pk} would cost ${estimate.total} but the MTurk account holds "
            f"${balance}: {estimate.describe()}"
        )
    return estimate


# --- publishing ------------------------------------------------------------------------------


def _check_custom_qualifications(batch: Batch, provider: MTurkProvider) -> None:
    for custom in batch.qualifications.get("custom", []):
        provider.check_qualification(custom["id"])


def mturk_publish_start(*, batch: Batch) -> Job:
    """Check everything MTurk would refuse and what it would cost, then enqueue publishing."""
    from annotation import tasks

    if batch.provider != PROVIDER:
        raise ServiceError(f"batch {batch.pk} uses the {batch.provider!r} provider, not mturk")
    if batch.status != BatchStatus.DRAFT:
        raise ServiceError(f"batch {batch.pk} is {batch.status}, not draft")
    validate_batch(batch)
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
                "total": str(estimate.total),
            },
        )
        event_record(action="mturk.publish_requested", run=batch.run, batch=batch, data=job.params)
        transaction.on_commit(lambda: tasks.mturk_publish.delay(job.pk))
    return job


def _pool_qualifications(*, batch: Batch, provider: MTurkProvider) -> dict[str, str]:
    """Both stages' pool qualifications of the run, created once and saved at once."""
    run = batch.run
    ids: dict[str, str] = {}
    for stage in disjoint_stages(batch.stage):
        row = PoolQualification.objects.filter(run=run, stage=stage, provider=PROVIDER).first()
        qid = provider.ensure_pool_qualification(
            run_id=run.pk, stage=stage, existing=row.qualification_id if row else None
        )
        if row is None:
            PoolQualification.objects.create(
                run=run, stage=stage, provider=PROVIDER, qualification_id=qid
            )
            event_record(
                action="mturk.pool_qualification_created",
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
    _check_custom_qualifications(batch, provider)
    mturk_cost_check(batch=batch, provider=provider, unpublished_only=True)
    pools = _pool_qualifications(batch=batch, provider=provider)
    others = [qid for stage, qid in pools.items() if stage != batch.stage]
    if not batch.provider_hit_type_id:
        batch.provider_hit_type_id = provider.create_hit_type(batch=batch, exclude_pools=others)
        Batch.objects.filter(pk=batch.pk).update(provider_hit_type_id=batch.provider_hit_type_id)
    todo = list(batch.hits.filter(provider_hit_id="").select_related("batch").order_by("position"))
    for n, hit in enumerate(todo, start=1):
        hit_id = provider.create_hit(hit=hit, hit_type_id=batch.provider_hit_type_id)
        Hit.objects.filter(pk=hit.pk).update(provider_hit_id=hit_id)
        if progress:
            progress(100.0 * n / len(todo), f"HIT {n}/{len(todo)} created ({hit_id})")
    event_record(
        action="mturk.hits_created",
        run=batch.run,
        batch=batch,
        data={"hit_type": batch.provider_hit_type_id, "created": len(todo)},
    )


# --- workers arriving from MTurk --------------------------------------------------------------


def mturk_assignment_open(*, hit: Hit, worker_id: str, assignment_id: str) -> Assignment:
    """The local assignment for an MTurk assignment a worker has accepted (created once)."""
    worker = worker_get_or_create(provider=PROVIDER, external_id=worker_id)
    if worker.blocked:
        raise ServiceError(f"worker {worker_id} is blocked")
    with transaction.atomic():
        Hit.objects.select_for_update().get(pk=hit.pk)
        pool_join(run=hit.batch.run, worker=worker, stage=hit.batch.stage)
        existing = Assignment.objects.filter(provider_assignment_id=assignment_id).first()
        if existing is not None:
            if existing.worker_id != worker.pk or existing.hit_id != hit.pk:
                raise ServiceError(f"assignment {assignment_id} belongs to another worker or HIT")
            return existing
        mine = Assignment.objects.filter(hit=hit, worker=worker).first()
        if mine is not None:
            if mine.state != AssignmentState.ACCEPTED:
                raise ServiceError(f"worker {worker_id} has already done this HIT")
            # The worker returned the HIT and accepted it again: MTurk made a new assignment.
            mine.provider_assignment_id = assignment_id
            mine.save(update_fields=["provider_assignment_id"])
            return mine
        assignment = Assignment.objects.create(
            hit=hit, worker=worker, provider_assignment_id=assignment_id, accepted_at=timezone.now()
        )
        event_record(
            action="assignment.accepted",
            run=hit.batch.run,
            batch=hit.batch,
            assignment=assignment,
            worker=worker,
            data={"provider_assignment_id": assignment_id},
        )
    return assignment


def mturk_pool_grant_pending(*, batch: Batch, provider: MTurkProvider) -> int:
    """Grant the pool qualification to workers of `batch`'s stage who do not have it yet."""
    qualification = PoolQualification.objects.filter(
        run=batch.run, stage=batch.stage, provider=PROVIDER
    ).first()
    if qualification is None:
        return 0
    pending = PoolMembership.objects.filter(
        run=batch.run,
        stage=batch.stage,
        worker__provider=PROVIDER,
        granted_at__isnull=True,
        worker__assignments__hit__batch=batch,
        worker__assignments__state__in=(AssignmentState.SUBMITTED, AssignmentState.APPROVED),
    ).distinct()
    granted = 0
    for membership in pending.select_related("worker"):
        provider.grant_pool(
            qualification_id=qualification.qualification_id, worker=membership.worker
        )
        PoolMembership.objects.filter(pk=membership.pk).update(granted_at=timezone.now())
        granted += 1
    return granted


# --- synchronisation -------------------------------------------------------------------------


@dataclass
class SyncReport:
    hits: int = 0
    ingested: int = 0
    changed: int = 0
    unknown_hits: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _last_feedback(assignment: Assignment) -> str:
    event = (
        Event.objects.filter(assignment=assignment, action="assignment.rejected")
        .order_by("-pk")
        .first()
    )
    return str(event.data.get("feedback", "")) if event else "Rejected after review."


def _ingest(*, hit: Hit, item: dict[str, Any], provider: MTurkProvider, report: SyncReport) -> None:
    batch = hit.batch
    remote_id = str(item["AssignmentId"])
    worker = worker_get_or_create(provider=PROVIDER, external_id=str(item["WorkerId"]))
    local = Assignment.objects.filter(provider_assignment_id=remote_id).first()
    if local is None:
        try:
            local = mturk_assignment_open(
                hit=hit, worker_id=worker.external_id, assignment_id=remote_id
            )
        except (PoolConflict, ServiceError) as exc:
            report.errors.append(f"assignment {remote_id}: {exc}")
            event_record(
                action="mturk.assignment_refused",
                run=batch.run,
                batch=batch,
                worker=worker,
                data={"assignment": remote_id, "error": str(exc)},
            )
            return
        accept = item.get("AcceptTime")
        if isinstance(accept, datetime):
            Assignment.objects.filter(pk=local.pk).update(accepted_at=accept)
    if local.state == AssignmentState.ACCEPTED:
        try:
            answers = parse_answer_xml(
                str(item.get("Answer", "")), record=f"assignment {remote_id}"
            )
            submitted = item.get("SubmitTime")
            assignment_submit(
                assignment_id=local.pk,
                worker=worker,
                answers=answers,
                submitted_at=submitted if isinstance(submitted, datetime) else None,
            )
        except (InputError, AnswerError, ServiceError) as exc:
            report.errors.append(f"assignment {remote_id}: {exc}")
            event_record(
                action="mturk.answers_refused",
                run=batch.run,
                batch=batch,
                assignment=local,
                worker=worker,
                data={"error": str(exc)},
            )
            return
        report.ingested += 1
        report.changed += 1
        local.refresh_from_db()
    _reconcile(
        local=local, remote_status=str(item["AssignmentStatus"]), provider=provider, report=report
    )


def _reconcile(
    *, local: Assignment, remote_status: str, provider: MTurkProvider, report: SyncReport
) -> None:
    if remote_status == "Approved" and local.state == AssignmentState.SUBMITTED:
        assignment_mark(assignment=local, state=AssignmentState.APPROVED, source="mturk")
    elif remote_status == "Rejected" and local.state == AssignmentState.SUBMITTED:
        assignment_mark(assignment=local, state=AssignmentState.REJECTED, source="mturk")
    elif remote_status == "Submitted" and local.state == AssignmentState.APPROVED:
        provider.approve(assignment=local)
    elif remote_status == "Submitted" and local.state == AssignmentState.REJECTED:
        provider.reject(assignment=local, feedback=_last_feedback(local))
    else:
        return
    report.changed += 1


def mturk_sync_batch(*, batch: Batch, provider: MTurkProvider | None = None) -> SyncReport:
    """Bring every assignment of the batch's HITs in from MTurk and reconcile states both ways."""
    provider = provider or mturk_provider()
    report = SyncReport()
    hits = (
        batch.hits.exclude(provider_hit_id="")
        .exclude(status=HitStatus.UNKNOWN)
        .select_related("batch__run")
    )
    for hit in hits.order_by("position"):
        report.hits += 1
        try:
            items = list(provider.list_assignments(hit=hit))
        except MTurkError as exc:
            if "does not exist" not in str(exc).lower() and "not found" not in str(exc).lower():
                raise
            Hit.objects.filter(pk=hit.pk).update(status=HitStatus.UNKNOWN)
            report.unknown_hits.append(hit.provider_hit_id)
            event_record(
                action="mturk.hit_unknown",
                run=batch.run,
                batch=batch,
                data={"hit": hit.provider_hit_id, "error": str(exc)},
            )
            continue
        for item in items:
            _ingest(hit=hit, item=item, provider=provider, report=report)
    mturk_pool_grant_pending(batch=batch, provider=provider)
    event_record(
        action="mturk.synced",
        run=batch.run,
        batch=batch,
        data={
            "hits": report.hits,
            "ingested": report.ingested,
            "changed": report.changed,
            "unknown_hits": report.unknown_hits,
            "errors": report.errors,
        },
    )
    return report


def mturk_sync_changes(*, batch: Batch) -> int:
    """`mturk_sync_batch` reduced to how many assignments changed."""
    return mturk_sync_batch(batch=batch).changed


def mturk_sync_open() -> list[SyncReport]:
    """Synchronise every published MTurk batch (the periodic job)."""
    return [
        mturk_sync_batch(batch=batch)
        for batch in Batch.objects.filter(provider=PROVIDER, status=BatchStatus.PUBLISHED)
    ]
