"""MTurk publishing, worker arrival and synchronisation. Remote calls go through the provider
(annotation/crowd/mturk.py); this module keeps the database in step with them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.crowd import provider_for
from annotation.crowd.mturk import (
    BONUS_FEE_RATE,
    PRODUCTION,
    SANDBOX,
    CostEstimate,
    MTurkError,
    MTurkProvider,
    batch_environment,
    estimate_cost,
    mturk_fee,
    mturk_fee_rate,
    validate_batch,
)
from annotation.errors import AnswerError, PoolConflict, ServiceError
from annotation.flows import disjoint_stages
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    BlockQualification,
    Bonus,
    Event,
    Hit,
    HitStatus,
    Job,
    PoolMembership,
    PoolQualification,
    Review,
    ReviewStatus,
    Worker,
)
from annotation.selectors.counting import COUNTED_STATES, pool_bar_reason
from annotation.selectors.pay import pay_estimate
from annotation.services.assignments import (
    assignment_confirm,
    assignment_mark,
    assignment_submit,
    worker_get_or_create,
    worker_id_normalise,
)
from annotation.services.events import event_record
from annotation.services.jobs import Progress, job_create
from annotation.services.review_closing import review_close_auto_approved
from pipeline.errors import InputError
from pipeline.mturk_xml import parse_answer_xml

PROVIDER = "mturk"
TOKEN_MEMORY = timedelta(hours=24)  # how long MTurk remembers a UniqueRequestToken


def mturk_provider() -> MTurkProvider:
    provider = provider_for(PROVIDER)
    assert isinstance(provider, MTurkProvider)
    return provider


# --- cost ------------------------------------------------------------------------------------


def mturk_block_qualification(*, environment: str, create: bool) -> str | None:
    """The project-block qualification of `environment` (created on first use when `create`)."""
    found = BlockQualification.objects.filter(provider=PROVIDER, environment=environment).first()
    if found is not None or not create:
        return found.qualification_id if found else None
    qualification_id = mturk_provider().create_block_qualification(environment=environment)
    found, _ = BlockQualification.objects.get_or_create(
        provider=PROVIDER, environment=environment, defaults={"qualification_id": qualification_id}
    )
    return found.qualification_id


def mturk_cost_estimate(*, batch: Batch, unpublished_only: bool = False) -> CostEstimate:
    hits = batch.hits.all()
    if unpublished_only:
        hits = hits.filter(provider_hit_id="")
    return estimate_cost(
        hits=hits.count(), assignments_per_hit=batch.assignments_per_hit, reward=batch.reward
    )


DAY = timedelta(hours=24)


def mturk_committed_last_day(*, now: datetime | None = None) -> Decimal:
    """Money committed at MTurk in the last 24 hours: every slot of the HITs created (reward
    and fee), assignments added to HITs, and bonuses sent (with their fee)."""
    now = now or timezone.now()
    since = now - DAY
    total = Decimal("0.00")
    created = (
        Hit.objects.filter(batch__provider=PROVIDER, create_attempted_at__gte=since)
        .exclude(provider_hit_id="")
        .select_related("batch")
    )
    for hit in created:
        total += hit.capacity * _slot_cost(hit.batch)
    added = Event.objects.filter(
        action="hit.assignments_added", batch__provider=PROVIDER, created_at__gte=since
    ).select_related("batch")
    for event in added:
        assert event.batch is not None
        total += int(event.data.get("added", 0)) * _slot_cost(event.batch)
    bonuses = Bonus.objects.filter(
        assignment__hit__batch__provider=PROVIDER, sent_at__gte=since
    ).values_list("amount", flat=True)
    for amount in bonuses:
        total += amount + mturk_fee(amount, BONUS_FEE_RATE)
    return total


def _slot_cost(batch: Batch) -> Decimal:
    return batch.reward + mturk_fee(batch.reward, mturk_fee_rate(batch.assignments_per_hit))


def mturk_daily_cap_check(*, amount: Decimal, what: str, now: datetime | None = None) -> None:
    """Refuse `what` (costing `amount`) if it would take the last 24 hours' commitments over
    CROWDVL_MTURK_DAILY_CAP."""
    cap = settings.CROWDVL_MTURK_DAILY_CAP
    if cap is None:
        return
    committed = mturk_committed_last_day(now=now)
    if committed + amount > Decimal(cap):
        raise ServiceError(
            f"{what} would commit ${amount} more; ${committed} was committed at MTurk in the "
            f"last 24 hours and the daily cap is ${cap} (CROWDVL_MTURK_DAILY_CAP)"
        )


def mturk_cost_check(
    *, batch: Batch, provider: MTurkProvider, unpublished_only: bool
) -> CostEstimate:
    """Refuse a batch that would exceed the configured budget, the daily cap or the account
    balance."""
    estimate = mturk_cost_estimate(batch=batch, unpublished_only=unpublished_only)
    pay = pay_estimate(batch=batch)
    if pay.below_minimum and batch.options.get("allow_low_pay") is not True:
        raise ServiceError(
            f"batch {batch.pk} pays below the minimum hourly rate (CROWDVL_MIN_HOURLY_PAY): "
            f"{pay.describe()}; raise the reward, or create the batch with --allow-low-pay"
        )
    mturk_daily_cap_check(amount=estimate.total, what=f"publishing batch {batch.pk}")
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


def _check_pilot(batch: Batch) -> None:
    """Production only after a pilot: a sandbox batch of the same run and stage that received
    work (someone tried the task as a worker), unless the batch option `skip_pilot` is set.
    A batch already partly published (a retry, a re-offered HIT) is not asked again."""
    if batch_environment(batch) != PRODUCTION or batch.options.get("skip_pilot") is True:
        return
    if batch.hits.exclude(provider_hit_id="").exists():
        return
    piloted = Assignment.objects.filter(
        hit__batch__run=batch.run,
        hit__batch__stage=batch.stage,
        hit__batch__provider=PROVIDER,
        hit__batch__environment=SANDBOX,
        state__in=COUNTED_STATES,
    ).exists()
    if not piloted:
        raise ServiceError(
            f"batch {batch.pk} would go to MTurk production before any pilot: publish a small "
            "batch of this stage in the sandbox first (CROWDVL_MTURK_ENV=sandbox, e.g. "
            "create_batch ... --provider mturk), do it as a worker at workersandbox.mturk.com "
            "and synchronise; or create the batch with --skip-pilot"
        )


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
    _check_pilot(batch)
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
        event_record(action="mturk.publish_requested", run=batch.run, batch=batch, data=job.params)
        transaction.on_commit(lambda: tasks.mturk_publish.delay(job.pk))
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
    if not batch.environment:  # fixed now: every later call for this batch uses it
        batch.environment = batch_environment(batch)
        Batch.objects.filter(pk=batch.pk).update(environment=batch.environment)
    _check_pilot(batch)
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
        action="mturk.hits_created",
        run=batch.run,
        batch=batch,
        data={"hit_type": batch.provider_hit_type_id, "created": len(todo)},
    )


# --- workers arriving from MTurk --------------------------------------------------------------

# Browser claims wait for synchronisation; past this many per slot a HIT stores no more (the
# answers still reach MTurk through its own form, and synchronisation brings them in).
UNCONFIRMED_PER_SLOT = 2


class TooManyUnconfirmed(ServiceError):
    """A HIT holds as many unconfirmed submissions as it will take."""


def _check_open(*, hit: Hit, now: datetime | None = None) -> None:
    now = now or timezone.now()
    batch = hit.batch
    if batch.status != BatchStatus.PUBLISHED or hit.status != HitStatus.OPEN:
        raise ServiceError("this HIT is not open for work")
    if batch.past_lifetime(now):
        raise ServiceError("this HIT has expired")


def mturk_task_open(
    *, hit: Hit, hit_id: str, worker_id: str, assignment_id: str, now: datetime | None = None
) -> Assignment | None:
    """Check that `worker_id` may open `hit` from MTurk's frame, writing nothing.

    Returns the worker's submission already stored here (to show its MTurk submit form again),
    or None. Raises ServiceError naming why the HIT cannot be worked on.
    """
    batch = hit.batch
    if not hit.provider_hit_id or hit_id != hit.provider_hit_id:
        raise ServiceError("this page does not belong to that MTurk HIT")
    external_id = worker_id_normalise(worker_id, provider=PROVIDER)
    if not external_id or len(external_id) > 100:
        raise ServiceError("a worker id must be 1 to 100 characters")
    worker = Worker.objects.filter(provider=PROVIDER, external_id=external_id).first()
    done = (
        Assignment.objects.filter(hit=hit, worker=worker, provider_assignment_id=assignment_id)
        .exclude(state=AssignmentState.ACCEPTED)
        .first()
        if worker is not None
        else None
    )
    if done is not None:
        return done
    _check_open(hit=hit, now=now)
    if worker is None:
        return None
    if worker.blocked:
        raise ServiceError(f"worker {external_id} is blocked")
    reason = pool_bar_reason(run=batch.run, worker=worker, stage=batch.stage)
    if reason:
        raise PoolConflict(reason)
    return None


def mturk_answers_receive(
    *, hit: Hit, worker_id: str, assignment_id: str, answers: Mapping[str, str]
) -> Assignment:
    """Store answers posted from MTurk's frame as unconfirmed work: they count only once
    synchronisation finds the assignment at MTurk for this HIT and worker."""
    worker = worker_get_or_create(provider=PROVIDER, external_id=worker_id)
    if worker.blocked:
        raise ServiceError(f"worker {worker.external_id} is blocked")
    with transaction.atomic():
        Hit.objects.select_for_update().get(pk=hit.pk)
        same = Assignment.objects.filter(
            provider_assignment_id=assignment_id, hit=hit, worker=worker
        ).first()
        if same is None or same.state == AssignmentState.ACCEPTED:
            _check_open(hit=hit)
        if same is None:
            waiting = hit.assignments.filter(confirmed=False).count()
            if waiting >= UNCONFIRMED_PER_SLOT * hit.capacity:
                raise TooManyUnconfirmed(f"HIT {hit.pk} holds {waiting} unconfirmed submissions")
            same = Assignment.objects.create(
                hit=hit,
                worker=worker,
                provider_assignment_id=assignment_id,
                accepted_at=timezone.now(),
                confirmed=False,
            )
        assignment_submit(assignment_id=same.pk, worker=worker, answers=answers)
    same.refresh_from_db()
    return same


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
    pending = PoolMembership.objects.filter(
        run=batch.run,
        stage=batch.stage,
        worker__provider=PROVIDER,
        granted_at__isnull=True,
        worker__assignments__hit__batch=batch,
        worker__assignments__state__in=COUNTED_STATES,
        worker__assignments__confirmed=True,
        worker__assignments__excluded=False,
    ).distinct()
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
    event = (
        Event.objects.filter(assignment=assignment, action="assignment.rejected")
        .order_by("-pk")
        .first()
    )
    return str(event.data.get("feedback", "")) if event else "Rejected after review."


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
            assignment_mark(assignment=local, state=AssignmentState.REJECTED, source="mturk")
            report.changed += 1
            return
        try:
            assignment_confirm(assignment=local, source="mturk")
        except ServiceError as exc:
            report.errors.append(f"assignment {remote_id}: {exc}")
            event_record(
                action="mturk.assignment_refused",
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
        action="assignment.accepted",
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
    if Event.objects.filter(
        batch=batch, action="mturk.answers_refused", data__assignment=remote_id
    ).exists():
        return
    event_record(
        action="mturk.answers_refused",
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
        provider.reject(assignment=local, feedback=_last_feedback(local))
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


def mturk_batches_to_sync() -> list[Batch]:
    """Published MTurk batches, and completed or expired ones until their work is final: late
    submissions, MTurk's auto-approvals and unconfirmed answers still to be settled."""
    now = timezone.now()
    batches = Batch.objects.filter(provider=PROVIDER).exclude(provider_hit_type_id="")
    found = []
    for batch in batches.filter(
        status__in=(BatchStatus.PUBLISHED, BatchStatus.COMPLETED, BatchStatus.EXPIRED)
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
                action="mturk.sync_failed", run=batch.run, batch=batch, data={"error": message}
            )
            continue
        if batch.sync_error:
            Batch.objects.filter(pk=batch.pk).update(sync_error="")
    return reports
