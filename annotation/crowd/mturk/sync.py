"""Synchronisation: every assignment MTurk lists brought in and reconciled both ways, pool
marks granted, and the periodic job over every batch whose work is not final yet."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.crowd.mturk.client import MTurkError, batch_environment, hit_gone
from annotation.crowd.mturk.provider import MTurkProvider
from annotation.crowd.mturk.spend import mturk_provider
from annotation.errors import AnswerError, ServiceError
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    EventAction,
    Hit,
    HitStatus,
    PoolMembership,
    PoolQualification,
    RefusedAnswers,
    RejectionFeedback,
    Review,
    ReviewStatus,
)
from annotation.selectors.counting import pool_members_ungranted
from annotation.services.events import event_record
from annotation.services.work.confirm import assignment_confirm
from annotation.services.work.decisions import assignment_mark, assignment_provider_reject
from annotation.services.work.review_closing import review_close_auto_approved
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from pipeline.errors import InputError
from pipeline.mturk_xml import parse_answer_xml

PROVIDER = "mturk"
TOKEN_MEMORY = timedelta(hours=24)  # how long MTurk remembers a UniqueRequestToken


def mturk_pool_grant_pending(*, batch: Batch, provider: MTurkProvider) -> int:
    """Grant the pool qualification to workers of `batch`'s stage who do not have it yet."""
    qualification = PoolQualification.objects.filter(
        run=batch.run,
        stage=batch.stage,
        provider=PROVIDER,
        environment=batch_environment(batch),
    ).first()
    if qualification is None:
        return 0
    pending = pool_members_ungranted(batch=batch)
    granted = 0
    for membership in pending.select_related("worker"):
        provider.grant_pool(
            qualification_id=qualification.qualification_id,
            worker=membership.worker,
            environment=qualification.environment,
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
    row = RejectionFeedback.objects.filter(assignment=assignment).first()
    return row.feedback if row else "Rejected after review."


def _ingest(*, hit: Hit, item: dict[str, Any], provider: MTurkProvider, report: SyncReport) -> None:
    """Bring one assignment MTurk lists for `hit` in: store its answers if they never reached
    us (all or nothing: refused answers write no row), confirm the local copy for this HIT and
    worker, and reconcile review states."""
    batch = hit.batch
    remote_id = str(item["AssignmentId"])
    status = str(item["AssignmentStatus"])
    worker_id = str(item["WorkerId"])
    local = Assignment.objects.filter(provider_assignment_id=remote_id, confirmed=True).first()
    if local is None:
        local = Assignment.objects.filter(
            provider_assignment_id=remote_id,
            hit=hit,
            worker__provider=PROVIDER,
            worker__external_id=worker_id,
            confirmed=False,
        ).first()
        try:
            with transaction.atomic():
                if local is None:
                    local = _remote_assignment_create(hit=hit, item=item)
                if local.state == AssignmentState.ACCEPTED:
                    _store_remote_answers(local=local, item=item)
                    report.ingested += 1
        except (InputError, AnswerError, ServiceError) as exc:
            _refused(hit=hit, remote_id=remote_id, worker_id=worker_id, status=status, exc=exc)
            report.errors.append(f"assignment {remote_id}: {exc}")
            return
        if status == "Rejected":
            # Rejected work is never confirmed, so every later sync comes this way again:
            # recorded once.
            if local.state != AssignmentState.REJECTED:
                assignment_mark(assignment=local, state=AssignmentState.REJECTED, source="mturk")
                report.changed += 1
            return
        try:
            assignment_confirm(assignment=local, source="mturk")
        except ServiceError as exc:
            report.errors.append(f"assignment {remote_id}: {exc}")
            event_record(
                action=EventAction.MTURK_ASSIGNMENT_REFUSED,
                run=batch.run,
                batch=batch,
                assignment=local,
                worker=local.worker,
                data={"error": str(exc)},
            )
            return
        report.changed += 1
        local.refresh_from_db()
    deadline = item.get("AutoApprovalTime")
    if isinstance(deadline, datetime) and local.auto_approve_at != deadline:
        Assignment.objects.filter(pk=local.pk).update(auto_approve_at=deadline)
        local.auto_approve_at = deadline
    _reconcile(local=local, remote_status=status, provider=provider, report=report)


def _remote_assignment_create(*, hit: Hit, item: dict[str, Any]) -> Assignment:
    batch = hit.batch
    worker = worker_get_or_create(provider=PROVIDER, external_id=str(item["WorkerId"]))
    accept = item.get("AcceptTime")
    local = Assignment.objects.create(
        hit=hit,
        worker=worker,
        provider_assignment_id=str(item["AssignmentId"]),
        accepted_at=accept if isinstance(accept, datetime) else timezone.now(),
        confirmed=False,
    )
    event_record(
        action=EventAction.ASSIGNMENT_ACCEPTED,
        run=batch.run,
        batch=batch,
        assignment=local,
        worker=worker,
        data={"provider_assignment_id": local.provider_assignment_id, "source": "mturk"},
    )
    return local


def _refused(*, hit: Hit, remote_id: str, worker_id: str, status: str, exc: Exception) -> None:
    """List answers MTurk holds that we cannot store, once per assignment: they are still
    "Submitted" at MTurk and will be auto-approved and paid unless someone rejects them."""
    batch = hit.batch
    _, new = RefusedAnswers.objects.get_or_create(
        batch=batch,
        remote_assignment_id=remote_id,
        defaults={
            "remote_worker_id": worker_id,
            "remote_hit_id": hit.provider_hit_id,
            "status": status,
            "error": str(exc),
        },
    )
    if not new:
        return
    event_record(
        action=EventAction.MTURK_ANSWERS_REFUSED,
        run=batch.run,
        batch=batch,
        data={
            "assignment": remote_id,
            "worker": worker_id,
            "hit": hit.provider_hit_id,
            "status": status,
            "error": str(exc),
        },
    )


def _store_remote_answers(*, local: Assignment, item: dict[str, Any]) -> None:
    """Store the answers MTurk holds for an assignment that never posted them here."""
    remote_id = local.provider_assignment_id
    answers = parse_answer_xml(str(item.get("Answer", "")), record=f"assignment {remote_id}")
    submitted = item.get("SubmitTime")
    assignment_submit(
        assignment_id=local.pk,
        worker=local.worker,
        answers=answers,
        submitted_at=submitted if isinstance(submitted, datetime) else None,
        check_pool=False,
    )
    local.refresh_from_db()


def _reconcile(
    *, local: Assignment, remote_status: str, provider: MTurkProvider, report: SyncReport
) -> None:
    if remote_status == "Approved" and local.state == AssignmentState.SUBMITTED:
        held = Review.objects.filter(assignment=local, status=ReviewStatus.OPEN).first()
        if held is not None:  # paid before anyone decided: the batch's policy applies
            review_close_auto_approved(review=held)
        else:
            assignment_mark(assignment=local, state=AssignmentState.APPROVED, source="mturk")
    elif remote_status == "Rejected" and local.state == AssignmentState.SUBMITTED:
        assignment_mark(assignment=local, state=AssignmentState.REJECTED, source="mturk")
    elif remote_status == "Submitted" and local.state == AssignmentState.APPROVED:
        provider.approve(assignment=local)
    elif remote_status == "Submitted" and local.state == AssignmentState.REJECTED:
        assignment_provider_reject(assignment=local, feedback=_last_feedback(local))
    else:
        return
    report.changed += 1


def mturk_sync_hit(*, hit: Hit, provider: MTurkProvider, report: SyncReport) -> None:
    """Bring in every assignment MTurk lists for one HIT (see `mturk_sync_batch`)."""
    batch = hit.batch
    report.hits += 1
    try:
        items = list(provider.list_assignments(hit=hit))
    except MTurkError as exc:
        if not hit_gone(exc):
            raise
        Hit.objects.filter(pk=hit.pk).update(status=HitStatus.UNKNOWN)
        report.unknown_hits.append(hit.provider_hit_id)
        event_record(
            action=EventAction.MTURK_HIT_UNKNOWN,
            run=batch.run,
            batch=batch,
            data={"hit": hit.provider_hit_id, "error": str(exc)},
        )
        return
    for item in items:
        _ingest(hit=hit, item=item, provider=provider, report=report)


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
        mturk_sync_hit(hit=hit, provider=provider, report=report)
    mturk_pool_grant_pending(batch=batch, provider=provider)
    event_record(
        action=EventAction.MTURK_SYNCED,
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


def mturk_batches_to_sync() -> list[Batch]:
    """Published MTurk batches, and completed or expired ones until their work is final: late
    submissions, MTurk's auto-approvals and unconfirmed answers still to be settled."""
    now = timezone.now()
    batches = Batch.objects.filter(provider=PROVIDER).exclude(provider_hit_type_id="")
    found = []
    for batch in batches.filter(
        status__in=(
            BatchStatus.PUBLISHED,
            BatchStatus.PAUSED,
            BatchStatus.COMPLETED,
            BatchStatus.EXPIRED,
        )
    ).order_by("pk"):
        horizon = (batch.published_at or now) + timedelta(
            seconds=batch.lifetime_seconds
            + batch.assignment_duration_seconds
            + batch.auto_approval_delay_seconds
        )
        unsettled = Assignment.objects.filter(
            hit__batch=batch, state__in=(AssignmentState.ACCEPTED, AssignmentState.SUBMITTED)
        ).exists()
        if batch.status == BatchStatus.PUBLISHED or unsettled or now <= horizon:
            found.append(batch)
    return found


def mturk_sync_open() -> list[SyncReport]:
    """Synchronise every MTurk batch whose work is not final yet (the periodic job). A batch
    that fails records its error (shown on the dashboard) and the others go on."""
    reports = []
    for batch in mturk_batches_to_sync():
        try:
            reports.append(mturk_sync_batch(batch=batch))
        except Exception as exc:  # noqa: BLE001 - one bad batch must not stop the rest
            message = f"{type(exc).__name__}: {exc}"
            Batch.objects.filter(pk=batch.pk).update(sync_error=message[:2000])
            event_record(
                action=EventAction.MTURK_SYNC_FAILED,
                run=batch.run,
                batch=batch,
                data={"error": message},
            )
            continue
        if batch.sync_error:
            Batch.objects.filter(pk=batch.pk).update(sync_error="")
    return reports
