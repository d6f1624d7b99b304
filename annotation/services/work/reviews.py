"""The manual review queue and automatic approval of everything else."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.errors import AlreadyPaid, ServiceError
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    EventAction,
    Review,
    ReviewStatus,
)
from annotation.permissions import Action, visible_runs
from annotation.providers import provider_names
from annotation.selectors.counting import counted
from annotation.selectors.reviews.gold_record import gold_record_hold_reasons
from annotation.services.events import event_record
from annotation.services.work.decisions import (
    assignment_approve,
    assignment_exclude,
    assignment_reject,
    assignment_reverse_rejection,
)
from annotation.services.work.reoffer import hits_reoffer
from annotation.services.work.review_closing import review_close_auto_approved
from annotation.services.work.speed_policy import speed_hold_reasons
from annotation.tasktypes import task_type_for
from pipeline.errors import InputError


def reviews_decide(
    *, review_ids: list[int], approve: bool, feedback: str = "", user: Any = None
) -> dict[str, Any]:
    """Decide several reviews the same way, each on its own (one that cannot be decided does
    not undo the others): the decided ids, and the reason for each one refused. With `user`,
    reviews outside the runs where they may decide reviews are refused one by one first."""
    decided: list[int] = []
    failed: dict[int, str] = {}
    reviews = Review.objects.filter(pk__in=review_ids)
    if user is not None:
        allowed = reviews.filter(
            assignment__hit__batch__run__in=visible_runs(user, Action.REVIEW)
        ).values_list("pk", flat=True)
        refused = sorted(set(review_ids) - set(allowed))
        failed.update({pk: "you may not decide it" for pk in refused})
        reviews = reviews.exclude(pk__in=refused)
    for review in reviews.order_by("pk"):
        try:
            with transaction.atomic():
                review_decide(review=review, approve=approve, feedback=feedback)
        except (ServiceError, InputError) as exc:
            failed[review.pk] = str(exc)
        else:
            decided.append(review.pk)
    missing = set(review_ids) - set(decided) - set(failed)
    failed.update({pk: "no such review" for pk in sorted(missing)})
    return {"decided": decided, "failed": failed}


def review_decide(*, review: Review, approve: bool, feedback: str = "") -> Review:
    """Approve or reject held work. Rejected work stops counting and its HIT reopens, so its
    pairs are judged again by someone else. Work the provider paid before the decision
    (auto-approved) can still be decided: approving counts it, rejecting excludes it (the
    payment stands) and re-offers its items. The review's row is locked and read again first:
    of two decisions at once (a double-click, two reviewers), the second finds it decided."""
    with transaction.atomic():
        review = (
            Review.objects.select_for_update(of=("self",))
            .select_related("assignment__hit__batch__run", "assignment__worker")
            .get(pk=review.pk)
        )
        return _decide(review=review, approve=approve, feedback=feedback)


def _decide(*, review: Review, approve: bool, feedback: str) -> Review:
    if review.status == ReviewStatus.OPEN:
        assignment = review.assignment
        try:
            if approve:
                assignment_approve(assignment=assignment)
            else:
                assignment_reject(assignment=assignment, feedback=feedback)
        except AlreadyPaid:
            review = review_close_auto_approved(review=review)
        else:
            review = _review_record(review=review, approve=approve, feedback=feedback, data={})
            if not approve:
                hits_reoffer(batch=assignment.hit.batch)
            return review
    if review.status == ReviewStatus.AUTO_APPROVED:
        assignment = Assignment.objects.select_related("hit__batch__run", "worker").get(
            pk=review.assignment_id
        )
        if approve:
            Assignment.objects.filter(pk=assignment.pk).update(excluded=False)
        else:
            assignment_exclude(assignment=assignment, reason="rejected after auto-approval")
        data = {"after_auto_approval": True, "excluded": not approve}
        review = _review_record(review=review, approve=approve, feedback=feedback, data=data)
        if not approve:
            hits_reoffer(batch=assignment.hit.batch)
        return review
    raise ServiceError(f"review {review.pk} was already decided ({review.status})")


def review_reverse(*, review: Review, feedback: str) -> Review:
    """Reverse a rejected review (a worker's appeal upheld): the work is approved and paid,
    within its provider's window from the submission (MTurk: 30 days), and counts again. Locked and read again first, as in
    `review_decide`: a second reversal at once finds it approved."""
    with transaction.atomic():
        review = Review.objects.select_for_update(of=("self",)).get(pk=review.pk)
        return _reverse(review=review, feedback=feedback)


def _reverse(*, review: Review, feedback: str) -> Review:
    if review.status != ReviewStatus.REJECTED:
        raise ServiceError(f"review {review.pk} is {review.status}, not rejected")
    assignment = Assignment.objects.select_related("hit__batch__run", "worker").get(
        pk=review.assignment_id
    )
    assignment_reverse_rejection(assignment=assignment, feedback=feedback)
    return _review_record(
        review=review, approve=True, feedback=feedback, data={"reversed_rejection": True}
    )


def _review_record(
    *, review: Review, approve: bool, feedback: str, data: Mapping[str, object]
) -> Review:
    assignment = review.assignment
    with transaction.atomic():
        review.status = ReviewStatus.APPROVED if approve else ReviewStatus.REJECTED
        review.feedback = feedback
        review.decided_at = timezone.now()
        review.save(update_fields=["status", "feedback", "decided_at"])
        batch = assignment.hit.batch
        event_record(
            action=EventAction.REVIEW_DECIDED,
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"status": review.status, "feedback": feedback, **data},
        )
    return review


def reviews_hold_by_policy(*, batch: Batch) -> int:
    """Open a review for submitted, unpaid work the batch's approval policy holds (its task
    type decides, e.g. BISON stage 2: a worker whose selections stage 3 mostly rejected); in
    every flow, work faster than the run's `hold_fast_seconds_per_item`; work of a worker
    who passes gold but disagrees with the other workers on the rest
    (`annotation/selectors/reviews/worker_agreement.py`; batch option `"agreement_hold": false`); and
    all work of a worker whose gold record on the stage is below the rule, not only the HITs
    holding a miss (`annotation/selectors/reviews/gold_record.py`, issue 47)."""
    # Imported here: the agreement is numpy's, and the review pages' URLs load this module.
    from annotation.selectors.reviews.worker_agreement import agreement_hold_reasons

    waiting = list(
        Assignment.objects.filter(
            counted(), hit__batch=batch, state=AssignmentState.SUBMITTED, review__isnull=True
        ).select_related("worker")
    )
    if not waiting:
        return 0
    task = task_type_for(batch.stage)
    held = dict(task.hold_reasons(batch=batch, assignments=waiting))
    # Beside the task's own policy: the run's speed rule, workers who pass gold but disagree
    # with the crowd, and workers who miss gold too often.
    for extra in (
        speed_hold_reasons(batch=batch, assignments=waiting),
        agreement_hold_reasons(batch=batch, assignments=waiting, ratings=task.gold_ratings),
        gold_record_hold_reasons(batch=batch, assignments=waiting),
    ):
        for pk, reasons in extra.items():
            held[pk] = [*held.get(pk, []), *reasons]
    opened = 0
    for assignment in waiting:
        why = held.get(assignment.pk)
        if not why:
            continue
        with transaction.atomic():
            _, created = Review.objects.get_or_create(
                assignment=assignment, defaults={"reasons": why}
            )
            if created:
                opened += 1
                event_record(
                    action=EventAction.REVIEW_OPENED,
                    run=batch.run,
                    batch=batch,
                    assignment=assignment,
                    worker=assignment.worker,
                    data={"reasons": why},
                )
    return opened


def reviews_hold_all() -> int:
    """The approval policies of every batch with unpaid work (periodic, before auto-approval;
    for MTurk it must run before MTurk's own auto-approval deadline)."""
    # In pk order: reviews opened in one order on every database.
    batches = (
        Batch.objects.filter(
            status__in=(BatchStatus.PUBLISHED, BatchStatus.PAUSED, BatchStatus.COMPLETED),
            hits__assignments__state=AssignmentState.SUBMITTED,
        )
        .distinct()
        .order_by("pk")
    )
    return sum(reviews_hold_by_policy(batch=batch) for batch in batches)


def assignments_auto_approve(*, now: datetime | None = None, batch: Batch | None = None) -> int:
    """Approve submitted work past its batch's approval delay, unless it waits for review
    (the batch's approval policy is applied first).

    A platform that approves on its own schedule (MTurk: the HIT type's delay) is left to it;
    synchronisation records what it did.
    """
    now = now or timezone.now()
    if batch is not None:
        reviews_hold_by_policy(batch=batch)
    else:
        reviews_hold_all()
    due = (
        Assignment.objects.filter(
            state=AssignmentState.SUBMITTED, submitted_at__isnull=False, confirmed=True
        )
        .exclude(hit__batch__provider__in=provider_names(approves_itself=True))
        .filter(Q(review__isnull=True) | Q(review__status=ReviewStatus.APPROVED))
        .select_related("hit__batch__run", "worker")
    )
    if batch is not None:
        due = due.filter(hit__batch=batch)
    approved = 0
    for assignment in due:
        delay = timedelta(seconds=assignment.hit.batch.auto_approval_delay_seconds)
        if assignment.submitted_at is not None and assignment.submitted_at + delay <= now:
            assignment_approve(assignment=assignment)
            approved += 1
    return approved
