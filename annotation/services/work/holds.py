"""Idle holds where claims start unconfirmed (`slots.claims_unconfirmed`: a panel's study link,
whose participant id is anyone's to type). A claim whose worker has submitted nothing in the
batch and has no answer in progress on it (no draft) is only a hold: past `idle_hold_seconds`
it yields its slot to the next claimer who finds no free one (`claim.assignment_claim_next`).
Issue 47: made-up ids from one study link held every task, and the next real participant was
told to return the study. A worker who has answered (a draft, or submitted work) keeps their
task by the slot rules of every claim (`slots.py`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet

from annotation.models import (
    Assignment,
    AssignmentDraft,
    AssignmentState,
    Batch,
    EventAction,
    HitStatus,
    Worker,
)
from annotation.selectors.counting import COUNTED_STATES
from annotation.services.events import event_record
from annotation.services.work.slots import claims_unconfirmed, first_claim_seconds

TAKEN_OVER = "nobody answered on it, and another participant needed the slot"


def idle_hold_seconds(batch: Batch) -> int:
    """How long an idle claim keeps its slot from a claimer who finds no other:
    CROWDVL_IDLE_HOLD_SECONDS, never more than the first-claim hold (after which it holds
    nothing anyway)."""
    return min(int(settings.CROWDVL_IDLE_HOLD_SECONDS), first_claim_seconds(batch))


def idle_holds(*, batch: Batch, now: datetime) -> QuerySet[Assignment]:
    """`batch`'s idle claims on open HITs that still hold their slot (within the first-claim
    hold: their workers submitted nothing in the batch), none where claims are confirmed."""
    if not claims_unconfirmed(batch):
        return Assignment.objects.none()
    first = now - timedelta(seconds=first_claim_seconds(batch))
    submitted = Assignment.objects.filter(
        worker=OuterRef("worker"), hit__batch=batch, state__in=COUNTED_STATES
    )
    return (
        Assignment.objects.filter(
            hit__batch=batch,
            hit__status=HitStatus.OPEN,
            state=AssignmentState.ACCEPTED,
            accepted_at__gte=first,
        )
        .exclude(Exists(submitted))
        .exclude(Exists(AssignmentDraft.objects.filter(assignment=OuterRef("pk"))))
    )


def idle_hold_release(*, held: Assignment, batch: Batch, by: Worker, now: datetime) -> bool:
    """Let `held`'s slot go to `by` (the caller holds its HIT's lock): False when it is no longer
    an idle hold past its time, or its row is busy (its worker saving a draft or submitting
    right now: they are working). The claim is abandoned, with the reason in the event log."""
    past = now - timedelta(seconds=idle_hold_seconds(batch))
    row = (
        idle_holds(batch=batch, now=now)
        .filter(pk=held.pk, accepted_at__lt=past)
        .select_for_update(of=("self",), skip_locked=True)
        .first()
    )
    if row is None:
        return False
    Assignment.objects.filter(pk=row.pk).update(state=AssignmentState.ABANDONED)
    event_record(
        action=EventAction.ASSIGNMENT_ABANDONED,
        run=batch.run,
        batch=batch,
        assignment=row,
        worker=row.worker,
        data={"source": "claim", "reason": TAKEN_OVER, "taken_by": by.pk},
    )
    return True
