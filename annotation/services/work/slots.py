"""Which assignments hold a slot of their HIT: the rules the claim (`claim.py`) and the submit
(`submit.py`) share."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import cast

from django.db.models import Exists, OuterRef, Q

from annotation.models import Assignment, AssignmentState, Batch, BatchStatus
from annotation.providers import provider_for
from annotation.selectors.counting import COUNTED_STATES, counted

LATE = (
    "your time for this task ran out, so it may have gone to another worker: your "
    "answers could not be accepted. Please start a new task."
)


def late_reason(assignment: Assignment, batch: Batch, now: datetime) -> str | None:
    """Why work on `assignment` can no longer be taken at `now` (its batch expired or its
    lifetime ended, or the claim outlived the assignment duration), or None. The submit refuses
    such work (`submit._check_clock`), a draft of it is not saved (`drafts.draft_save`), and
    an invited worker's page lists no such task as theirs to go on with."""
    if batch.status == BatchStatus.EXPIRED or batch.past_lifetime(now):
        return "this batch has expired: your answers could not be accepted"
    if assignment.accepted_at < now - timedelta(seconds=batch.assignment_duration_seconds):
        return LATE
    return None


def first_claim_seconds(batch: Batch) -> int:
    """How long a worker with nothing submitted in `batch` holds a claimed HIT (so made-up or
    idle claimants cannot starve a batch): option `first_claim_seconds`, by default a minute
    per question with a 10-minute floor, never more than the assignment duration."""
    default = max(600, 60 * batch.items_per_hit)
    seconds = int(batch.options.get("first_claim_seconds", default))
    return min(seconds, batch.assignment_duration_seconds)


def claims_unconfirmed(batch: Batch) -> bool:
    """Whether `batch`'s claims start unconfirmed and hold their slots until the provider
    confirms them (`CrowdProvider.claims_unconfirmed`, e.g. a panel without an API)."""
    return provider_for(batch.provider).claims_unconfirmed


def kept_work(batch: Batch) -> Q:
    """Submitted work holding its slot for good: counted work, and where claims start
    unconfirmed (`claims_unconfirmed`), work waiting for the provider's confirmation too."""
    if claims_unconfirmed(batch):
        return Q(state__in=COUNTED_STATES, excluded=False)
    return counted()


def claim_rows(batch: Batch) -> Q:
    """The rows a claim of `batch` makes: confirmed ones, or where claims start unconfirmed
    (`claims_unconfirmed`), any. Other unconfirmed rows (a browser's word only) never hold a
    slot."""
    return Q() if claims_unconfirmed(batch) else Q(confirmed=True)


def active_assignments(now: datetime, batch: Batch) -> Q:
    """Assignments holding a slot of their HIT: kept work (`kept_work`) and claims still within
    their time (the assignment duration; the shorter first-claim time for a worker who has
    submitted nothing in the batch)."""
    fresh = now - timedelta(seconds=batch.assignment_duration_seconds)
    first = now - timedelta(seconds=first_claim_seconds(batch))
    has_submitted = Exists(
        Assignment.objects.filter(
            worker=OuterRef("worker"), hit__batch=batch, state__in=COUNTED_STATES
        )
    )
    # Q | Exists is typed as a plain Combinable by the stubs; Django gives a Q.
    return cast(
        Q,
        kept_work(batch)
        | (
            Q(state=AssignmentState.ACCEPTED, accepted_at__gte=fresh)
            & claim_rows(batch)
            & (Q(accepted_at__gte=first) | has_submitted)
        ),
    )


def claim_holds(assignment: Assignment, now: datetime, batch: Batch) -> bool:
    """Whether a confirmed, accepted assignment within its duration still holds its slot: the
    same rule as `active_assignments`, with the worker's earlier work asked only when the
    short first-claim hold has passed."""
    if assignment.accepted_at >= now - timedelta(seconds=first_claim_seconds(batch)):
        return True
    return Assignment.objects.filter(
        worker_id=assignment.worker_id, hit__batch=batch, state__in=COUNTED_STATES
    ).exists()
