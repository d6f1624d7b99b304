"""The provider confirms a claim made in the browser (an id anyone could type), so its work
counts from then on."""

from __future__ import annotations

from django.db import transaction

from annotation.errors import ServiceError
from annotation.models import Assignment, EventAction, Hit
from annotation.selectors.counting import COUNTED_STATES, counted, earlier_stages
from annotation.services.events import event_record
from annotation.services.work.claim import same_items_reason
from annotation.services.work.pools import pool_take
from annotation.services.work.recount import batch_refresh_status, hit_recount
from annotation.services.work.review_opening import review_open_if_needed


def assignment_confirm(*, assignment: Assignment, source: str) -> Assignment:
    """Record that the provider has seen `assignment` (MTurk: synchronisation found it for this
    HIT and worker), so its work counts from now on.

    Refused (ServiceError; the row stays unconfirmed) when the HIT already holds its capacity
    of counted work, the worker already holds a confirmed assignment of the HIT, or the HIT
    re-offers items the worker had (confirmed) on the HIT it came from. Confirmed
    but excluded when the worker has confirmed work in an earlier stage of the run; confirming
    earlier-stage work excludes the worker's later-stage work instead.
    """
    with transaction.atomic():
        hit = Hit.objects.select_for_update().select_related("batch__run").get(pk=assignment.hit_id)
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("worker")
            .get(pk=assignment.pk)
        )
        if assignment.confirmed:
            return assignment
        batch, worker = hit.batch, assignment.worker
        run = batch.run
        if Assignment.objects.filter(hit=hit, worker=worker, confirmed=True).exists():
            raise ServiceError(
                f"worker {worker.external_id} already holds a confirmed assignment of HIT {hit.pk}"
            )
        # The provider's record only: an unconfirmed row (a browser's word) never refuses.
        reason = same_items_reason(hit=hit, worker=worker, confirmed_only=True)
        if reason:
            raise ServiceError(reason)
        earlier = Assignment.objects.filter(
            worker=worker,
            hit__batch__run=run,
            hit__batch__stage__in=earlier_stages(batch.stage),
            confirmed=True,
            state__in=COUNTED_STATES,
        )
        excluded = earlier.exists()
        if not excluded and hit.assignments.filter(counted()).count() >= hit.capacity:
            raise ServiceError(f"HIT {hit.pk} already holds {hit.capacity} counted assignments")
        Assignment.objects.filter(pk=assignment.pk).update(confirmed=True, excluded=excluded)
        assignment.confirmed, assignment.excluded = True, excluded
        event_record(
            action=EventAction.ASSIGNMENT_CONFIRMED,
            run=run,
            batch=batch,
            assignment=assignment,
            worker=worker,
            data={"source": source, "excluded": excluded},
        )
        if not excluded and assignment.state in COUNTED_STATES:
            pool_take(run=run, worker=worker, stage=batch.stage)
            hit_recount(hit=hit)
            questions = list(hit.questions.select_related("item"))
            answers = list(assignment.answers.order_by("question__position"))
            review_open_if_needed(assignment=assignment, questions=questions, answers=answers)
    batch_refresh_status(batch=batch)
    return assignment
