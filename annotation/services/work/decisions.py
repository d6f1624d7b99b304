"""Decisions on submitted work: approve, reject (with a paid redo where the provider and the
daily cap allow one), reverse a rejection, stop counting paid work, and outcomes decided
elsewhere (`assignment_mark`). A HIT whose provider will not grow is marked for re-offering."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.models import (
    ASSIGNMENT_STATE_ACTIONS,
    Assignment,
    AssignmentState,
    EventAction,
    Hit,
    RejectionFeedback,
    SlotsAdded,
)
from annotation.providers import provider_for
from annotation.services.events import event_record
from annotation.services.work.recount import hit_recount


def assignment_mark(
    *, assignment: Assignment, state: str, source: str, **data: object
) -> Assignment:
    """Record a review outcome decided elsewhere (by us via the provider, or by the provider)."""
    batch = assignment.hit.batch
    with transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk).update(state=state)
        assignment.state = state
        if state == AssignmentState.REJECTED:  # what the worker was told, to tell them again
            RejectionFeedback.objects.update_or_create(
                assignment=assignment,
                defaults={"feedback": str(data.get("feedback", "")), "rejected_at": timezone.now()},
            )
        event_record(
            action=ASSIGNMENT_STATE_ACTIONS[AssignmentState(state)],
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"source": source, **data},
        )
        if state == AssignmentState.REJECTED:
            hit_recount(hit=assignment.hit)
    return assignment


def _check_confirmed(assignment: Assignment) -> None:
    if not assignment.confirmed:
        raise ServiceError(
            f"assignment {assignment.pk} is not confirmed by its provider yet; "
            "synchronise the batch first"
        )


def assignment_approve(*, assignment: Assignment) -> Assignment:
    """Approve (and pay) submitted, confirmed work at its provider."""
    _check_confirmed(assignment)
    if assignment.state == AssignmentState.APPROVED:
        return assignment
    if assignment.state != AssignmentState.SUBMITTED:
        raise ServiceError(f"assignment {assignment.pk} is {assignment.state}, not submitted")
    provider_for(assignment.hit.batch.provider).approve(assignment=assignment)
    return assignment_mark(
        assignment=assignment, state=AssignmentState.APPROVED, source="requester"
    )


def assignment_reject(*, assignment: Assignment, feedback: str) -> Assignment:
    """Reject submitted work; its answers stop counting and the HIT reopens for another worker."""
    if not feedback.strip():
        raise ServiceError("rejecting work needs feedback for the worker")
    _check_confirmed(assignment)
    if assignment.state == AssignmentState.REJECTED:
        return assignment
    if assignment.state != AssignmentState.SUBMITTED:
        raise ServiceError(f"assignment {assignment.pk} is {assignment.state}, not submitted")
    assignment_provider_reject(assignment=assignment, feedback=feedback)
    # Recorded as soon as the provider accepted the rejection, whether or not the HIT grew.
    return assignment_mark(
        assignment=assignment, state=AssignmentState.REJECTED, source="requester", feedback=feedback
    )


def assignment_provider_reject(*, assignment: Assignment, feedback: str) -> bool:
    """Reject `assignment` at its provider and ask for another worker in its place if the
    daily cap allows the slot; whether the HIT grew (if not, its items are to be re-offered)."""
    refused = _redo_refusal(assignment)
    grown = provider_for(assignment.hit.batch.provider).reject(
        assignment=assignment, feedback=feedback, redo=refused is None
    )
    if grown:
        _redo_added(assignment)
    else:
        _cannot_grow(assignment=assignment, refused=refused)
    return grown


def _redo_refusal(assignment: Assignment) -> str | None:
    """Why no paid worker may be asked for in place of `assignment`'s work now (the daily cap,
    checked before the slot is requested), or None. Refused, the HIT's items wait to be
    re-offered (`hits_reoffer` checks the cap again)."""
    hit = assignment.hit
    provider = provider_for(hit.batch.provider)
    return provider.spend_refusal(
        amount=provider.slot_cost(batch=hit.batch),
        what=f"another worker on HIT {hit.pk} in place of assignment {assignment.pk}",
    )


def _redo_added(assignment: Assignment) -> None:
    """Record a paid slot a remote provider added in place of `assignment`'s work: it counts
    in the day's commitments like any assignment added to a HIT."""
    batch = assignment.hit.batch
    if provider_for(batch.provider).remote:
        # The daily cap's row: one redo per rejected assignment (the provider's token makes a
        # repeated request add nothing).
        SlotsAdded.objects.get_or_create(
            redo=assignment, defaults={"hit": assignment.hit, "added": 1}
        )
        event_record(
            action=EventAction.HIT_ASSIGNMENTS_ADDED,
            run=batch.run,
            batch=batch,
            assignment=assignment,
            data={"hit": assignment.hit_id, "added": 1, "redo": assignment.pk},
        )


def assignment_reversible_until(*, assignment: Assignment) -> datetime | None:
    """The last moment `assignment`'s rejection can be reversed: its provider's window from the
    submission, as the provider counts it (MTurk: 30 days); None when there is no limit."""
    window = provider_for(assignment.hit.batch.provider).reversal_window
    if window is None or assignment.submitted_at is None:
        return None
    return assignment.submitted_at + window


def assignment_reverse_rejection(
    *, assignment: Assignment, feedback: str, now: datetime | None = None
) -> Assignment:
    """Accept (and pay) work that was rejected, e.g. after a worker's appeal: within its
    provider's window from the submission (`assignment_reversible_until`). Its answers count
    again."""
    if not feedback.strip():
        raise ServiceError("reversing a rejection needs a message for the worker")
    if assignment.state == AssignmentState.APPROVED:
        return assignment
    if assignment.state != AssignmentState.REJECTED:
        raise ServiceError(f"assignment {assignment.pk} is {assignment.state}, not rejected")
    until = assignment_reversible_until(assignment=assignment)
    if until is not None and (now or timezone.now()) > until:
        raise ServiceError(
            f"assignment {assignment.pk} was submitted on {assignment.submitted_at:%Y-%m-%d}: "
            f"{assignment.hit.batch.provider} reverses a rejection only until "
            f"{until:%Y-%m-%d %H:%M} UTC, counted from the submission (pay a bonus instead)"
        )
    provider_for(assignment.hit.batch.provider).approve_rejected(
        assignment=assignment, feedback=feedback
    )
    assignment = assignment_mark(
        assignment=assignment,
        state=AssignmentState.APPROVED,
        source="requester",
        reversed_rejection=True,
        feedback=feedback,
    )
    Assignment.objects.filter(pk=assignment.pk).update(excluded=False)
    hit_recount(hit=assignment.hit)
    return assignment


def assignment_exclude(*, assignment: Assignment, reason: str) -> Assignment:
    """Stop counting work that stays paid (e.g. the provider auto-approved it before a
    reviewer rejected it); its HIT takes another worker, or its items are re-offered. (Work
    already held out, e.g. auto-approved under the "exclude" policy, gets its redo now; the
    provider's token makes a repeated redo add nothing.)"""
    batch = assignment.hit.batch
    with transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk).update(excluded=True)
        assignment.excluded = True
        event_record(
            action=EventAction.ASSIGNMENT_EXCLUDED,
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"reason": reason},
        )
        hit_recount(hit=assignment.hit)
    refused = _redo_refusal(assignment)
    if refused is None and provider_for(batch.provider).redo(assignment=assignment):
        _redo_added(assignment)
    else:
        _cannot_grow(assignment=assignment, refused=refused)
    return assignment


def _cannot_grow(*, assignment: Assignment, refused: str | None = None) -> None:
    """Mark the HIT for re-offering (`hits_reoffer`): the provider will not add a worker, or
    (`refused`, why) the daily cap did not allow one."""
    batch = assignment.hit.batch
    Hit.objects.filter(pk=assignment.hit_id, cannot_grow_at__isnull=True).update(
        cannot_grow_at=timezone.now()
    )
    event_record(
        action=EventAction.HIT_CANNOT_GROW,
        run=batch.run,
        batch=batch,
        assignment=assignment,
        data={
            "hit": assignment.hit_id,
            "note": "no assignment is added to this HIT: its items go to a new HIT (or, once "
            "the batch has ended, are reported)",
            **({"refused": refused} if refused else {}),
        },
    )
