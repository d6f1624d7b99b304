"""A worker claims a HIT of a batch: their open assignment, or a slot on a HIT they may do."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    EventAction,
    Hit,
    HitStatus,
    Worker,
)
from annotation.services.datasets.images import image_seen_before, images_kept_apart
from annotation.services.events import event_record
from annotation.services.runs.gold import gold_kept_apart, gold_seen_before
from annotation.services.work.holds import idle_hold_release, idle_hold_seconds, idle_holds
from annotation.services.work.pools import pool_enter
from annotation.services.work.slots import (
    active_assignments,
    claim_holds,
    claim_rows,
    claims_unconfirmed,
)


def assignment_claim_next(
    *, batch: Batch, worker: Worker, now: datetime | None = None, consent_version: str = ""
) -> Assignment | None:
    """Give `worker` their open assignment in `batch`, or a new one on a HIT they have not done.
    A new one records `consent_version`, the version of the run's information and consent
    text the worker accepted (their way in checked it): the text their work is done under,
    whatever it changes to before they submit.

    HIT rows are locked while a slot is taken so two workers never fill the same last slot;
    the worker's row is locked first, so one worker's concurrent claims (a double click, two
    tabs) run one after the other and the second finds the first's assignment.
    """
    now = now or timezone.now()
    if worker.blocked:
        raise ServiceError(f"worker {worker.external_id} is blocked")
    if batch.status == BatchStatus.PAUSED and not batch.past_lifetime(now):
        # No new claim while paused, but work in progress may finish: their open one.
        return (
            Assignment.objects.filter(
                hit__batch=batch, worker=worker, state=AssignmentState.ACCEPTED
            )
            .filter(active_assignments(now, batch))
            .first()
        )
    if batch.status != BatchStatus.PUBLISHED or batch.past_lifetime(now):
        return None
    with transaction.atomic():
        found = _claim(batch=batch, worker=worker, now=now, consent=consent_version)
        if found is None and claims_unconfirmed(batch):  # no free slot: an idle hold's
            found = _take_over(batch=batch, worker=worker, now=now, consent=consent_version)
        return found


def claimable_hits(*, batch: Batch, worker: Worker) -> QuerySet[Hit]:
    """`batch`'s open HITs `worker` may do, full or not: none they had, nor their items
    again, nor a gold copy or (where kept apart) an image they saw."""
    hits = (
        Hit.objects.filter(batch=batch, status=HitStatus.OPEN)
        .exclude(assignments__worker=worker)
        .exclude(judged_before(worker))
    )
    # A rule that cannot apply to the batch's stage is left out (its subquery is the cost).
    if gold_kept_apart(batch):
        hits = hits.exclude(gold_seen_before(worker))
    return hits.exclude(image_seen_before(worker)) if images_kept_apart(batch) else hits


def _take_over(*, batch: Batch, worker: Worker, now: datetime, consent: str) -> Assignment | None:
    """Where claims start unconfirmed and no slot is free: the slot of the oldest idle hold
    past its time (`holds.py`) on a HIT `worker` may do. Its HIT is locked first, as the
    claim and the confirmation lock it; a HIT or hold another request holds is skipped (never
    a wait: the caller says when to come back, `claim_wait_seconds`)."""
    past = now - timedelta(seconds=idle_hold_seconds(batch))
    held = (
        idle_holds(batch=batch, now=now)
        .filter(accepted_at__lt=past, hit__in=claimable_hits(batch=batch, worker=worker))
        .exclude(worker=worker)
        .order_by("accepted_at", "pk")
    )
    for row in held[:5]:  # a few tries: another claimer may take the same hold first
        hit = Hit.objects.select_for_update(skip_locked=True).filter(pk=row.hit_id).first()
        if hit is not None and idle_hold_release(held=row, batch=batch, by=worker, now=now):
            return _claim_take(
                hit_id=row.hit_id, batch=batch, worker=worker, now=now, consent=consent
            )
    return None


def claim_wait_seconds(*, batch: Batch, worker: Worker, now: datetime | None = None) -> int | None:
    """When `worker` found no task: in about how many seconds an idle hold on a HIT they may
    do can be taken over (`holds.py`), or None when no such hold is waiting."""
    now = now or timezone.now()
    oldest = (
        idle_holds(batch=batch, now=now)
        .filter(hit__in=claimable_hits(batch=batch, worker=worker))
        .exclude(worker=worker)
        .order_by("accepted_at")
        .values_list("accepted_at", flat=True)
        .first()
    )
    if oldest is None:
        return None
    due = oldest + timedelta(seconds=idle_hold_seconds(batch))
    return max(1, int((due - now).total_seconds()) + 1)


def _claim(*, batch: Batch, worker: Worker, now: datetime, consent: str) -> Assignment | None:
    """`assignment_claim_next`'s search for a slot, inside its transaction."""
    Worker.objects.select_for_update().filter(pk=worker.pk).first()
    pool_enter(batch=batch, worker=worker)
    # Their open claim, if it still holds its slot (`active_assignments` for one row).
    mine = Assignment.objects.filter(
        claim_rows(batch),
        hit__batch=batch,
        worker=worker,
        state=AssignmentState.ACCEPTED,
        accepted_at__gte=now - timedelta(seconds=batch.assignment_duration_seconds),
    ).first()
    if mine is not None and claim_holds(mine, now, batch):
        return mine
    free = _with_free_slots(claimable_hits(batch=batch, worker=worker), batch=batch, now=now)
    # One HIT row locked at a time, in position order (so claimers never deadlock). First
    # pass: skip rows other claimers hold, so concurrent workers spread over HITs instead
    # of queueing on the first one; when every open row is held, wait for one, so a worker
    # is never told "no work" while a slot remains.
    tried: list[int] = []
    skip = True
    while True:
        hit = free.exclude(pk__in=tried).select_for_update(of=("self",), skip_locked=skip).first()
        if hit is None:
            if skip:
                skip = False
                continue
            return None
        hit.batch = batch  # capacity reads it; the same row
        # Recount under the lock: the read may predate another claimer's commit.
        if hit.assignments.filter(active_assignments(now, batch)).count() >= hit.capacity:
            tried.append(hit.pk)
            continue
        return _claim_take(hit_id=hit.pk, batch=batch, worker=worker, now=now, consent=consent)


def _with_free_slots(hits: QuerySet[Hit], *, batch: Batch, now: datetime) -> QuerySet[Hit]:
    """`hits` with fewer assignments holding a slot (`active_assignments`) than their
    capacity, in position order."""
    active = (
        Assignment.objects.filter(active_assignments(now, batch), hit=OuterRef("pk"))
        .order_by()
        .values("hit")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return (
        hits.alias(active=Coalesce(Subquery(active), Value(0)))
        .filter(
            active__lt=Coalesce(F("max_assignments"), Value(batch.assignments_per_hit))
            + F("extra_assignments")
        )
        .order_by("position")
    )


def _claim_take(
    *, hit_id: int, batch: Batch, worker: Worker, now: datetime, consent: str
) -> Assignment:
    assignment = Assignment.objects.create(
        hit_id=hit_id,
        worker=worker,
        accepted_at=now,
        confirmed=not claims_unconfirmed(batch),
        consent_version=consent,
    )
    event_record(
        action=EventAction.ASSIGNMENT_ACCEPTED,
        run=batch.run,
        batch=batch,
        assignment=assignment,
        worker=worker,
    )
    return assignment


def judged_before(worker: Worker, *, confirmed_only: bool = False) -> Exists:
    """HITs (as a filter on Hit) whose items `worker` already had: the HIT they were
    re-offered from (`reoffered_as`) holds an assignment of theirs. With `confirmed_only`,
    only assignments the provider confirmed count (a browser's claim never blocks real work)."""
    theirs = Assignment.objects.filter(hit__reoffered_as=OuterRef("pk"), worker=worker)
    return Exists(theirs.filter(confirmed=True) if confirmed_only else theirs)


def same_items_reason(*, hit: Hit, worker: Worker, confirmed_only: bool = False) -> str | None:
    """Why `worker` may not work on `hit` because they had its items before, or None."""
    rule = judged_before(worker, confirmed_only=confirmed_only)
    if not Hit.objects.filter(rule, pk=hit.pk).exists():
        return None
    return (
        f"worker {worker.external_id} already had these items on the HIT they were re-offered "
        "from: nobody judges the same items twice"
    )
