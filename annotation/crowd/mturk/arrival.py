"""Workers arriving from MTurk's frame: opening a HIT writes nothing, answers posted here are
stored as unconfirmed work that counts once synchronisation finds it at MTurk."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from annotation.errors import PoolConflict, ServiceError
from annotation.models import Assignment, AssignmentState, BatchStatus, Hit, HitStatus, Worker
from annotation.selectors.counting import pool_bar_reason
from annotation.services.work.claim import same_items_reason
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create, worker_id_normalise

PROVIDER = "mturk"
TOKEN_MEMORY = timedelta(hours=24)  # how long MTurk remembers a UniqueRequestToken


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
    reason = same_items_reason(hit=hit, worker=worker)
    if reason:
        raise ServiceError(reason)
    return None


def mturk_answers_receive(
    *, hit: Hit, worker_id: str, assignment_id: str, answers: Mapping[str, str]
) -> Assignment:
    """Store answers posted from MTurk's frame as unconfirmed work: they count only once
    synchronisation finds the assignment at MTurk for this HIT and worker.

    A refused post writes nothing: a new worker's row is made in the same transaction as the
    answers, after every check, so forged ids that are refused leave no rows behind."""
    external_id = worker_id_normalise(worker_id, provider=PROVIDER)
    if not external_id or len(external_id) > 100:
        raise ServiceError("a worker id must be 1 to 100 characters")
    with transaction.atomic():
        Hit.objects.select_for_update().get(pk=hit.pk)
        worker = Worker.objects.filter(provider=PROVIDER, external_id=external_id).first()
        if worker is not None and worker.blocked:
            raise ServiceError(f"worker {worker.external_id} is blocked")
        same = (
            Assignment.objects.filter(
                provider_assignment_id=assignment_id, hit=hit, worker=worker
            ).first()
            if worker is not None
            else None
        )
        if same is None or same.state == AssignmentState.ACCEPTED:
            _check_open(hit=hit)
            reason = same_items_reason(hit=hit, worker=worker) if worker is not None else None
            if reason:  # the page refuses them too; a kept form token must not get past it
                raise ServiceError(reason)
        if same is None:
            waiting = hit.assignments.filter(confirmed=False).count()
            if waiting >= UNCONFIRMED_PER_SLOT * hit.capacity:
                raise TooManyUnconfirmed(f"HIT {hit.pk} holds {waiting} unconfirmed submissions")
            if worker is None:  # rolled back with the answers if they are refused
                worker = worker_get_or_create(provider=PROVIDER, external_id=external_id)
            same = Assignment.objects.create(
                hit=hit,
                worker=worker,
                provider_assignment_id=assignment_id,
                accepted_at=timezone.now(),
                confirmed=False,
            )
        assert worker is not None  # an existing assignment was found through its worker
        assignment_submit(assignment_id=same.pk, worker=worker, answers=answers)
    same.refresh_from_db()
    return same
