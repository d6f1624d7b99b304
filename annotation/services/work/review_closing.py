"""Closing a review the provider decided: MTurk paid held work on its own (auto-approval)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation.models import Assignment, AssignmentState, Batch, EventAction, Review, ReviewStatus
from annotation.services.events import event_record
from annotation.services.work.decisions import assignment_mark

AUTO_APPROVED_POLICIES = ("exclude", "count")


def auto_approved_policy(batch: Batch) -> str:
    """What happens to held work the provider paid before a decision (batch option
    `auto_approved_reviews`): "exclude" (the default: held work never counts unchecked) or
    "count"."""
    return str(batch.options.get("auto_approved_reviews", "exclude"))


def review_close_auto_approved(*, review: Review) -> Review:
    """Close an open review whose work the provider approved on its own (MTurk's auto-approval
    deadline passed): the worker is paid; the answers follow the batch's policy."""
    with transaction.atomic():
        review = Review.objects.select_for_update().select_related("assignment").get(pk=review.pk)
        if review.status != ReviewStatus.OPEN:
            return review
        assignment = review.assignment
        batch = assignment.hit.batch
        policy = auto_approved_policy(batch)
        review.status = ReviewStatus.AUTO_APPROVED
        review.decided_at = timezone.now()
        review.save(update_fields=["status", "decided_at"])
        # Held work counts only once someone approves it, unless the policy says otherwise.
        Assignment.objects.filter(pk=assignment.pk).update(excluded=policy == "exclude")
        event_record(
            action=EventAction.REVIEW_AUTO_APPROVED,
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"policy": policy},
        )
    if assignment.state == AssignmentState.SUBMITTED:
        assignment_mark(assignment=assignment, state=AssignmentState.APPROVED, source="provider")
    return review
