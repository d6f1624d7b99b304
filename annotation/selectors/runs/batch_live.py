"""A batch's assignments as they are now, for its page (polled) and the API: counts by live
state and the most recent rows with the worker's pseudonym, claim time and elapsed time.

Live states split the stored ones by the clock, with the claim rule's own times
(`services/slots.active_assignments`): an accepted claim is "working" while it holds
its slot (the batch's time per assignment; the shorter first-claim time for a worker with
nothing submitted in the batch), then "timed_out"; "returned" is an abandoned claim (given
back, or ended by the provider)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import BooleanField, Count, Exists, ExpressionWrapper, OuterRef, Q
from django.utils import timezone

from annotation.models import Assignment, AssignmentState, Batch
from annotation.selectors.counting import COUNTED_STATES
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.services.work.slots import first_claim_seconds

LIVE_STATES = ("working", "timed_out", "returned", "submitted", "approved", "rejected")
ROWS = 200  # the newest claims shown; the counts cover every assignment


@dataclass(frozen=True)
class LiveRow:
    assignment: int
    hit: int  # 1-based, as the batch's preview numbers its HITs
    worker: str  # pseudonym
    state: str
    confirmed: bool
    accepted_at: datetime
    started_at: datetime | None
    submitted_at: datetime | None
    elapsed_seconds: int


@dataclass(frozen=True)
class LiveStatus:
    batch: int
    status: str
    now: datetime
    counts: dict[str, int]
    rows: list[LiveRow]


def _holds(batch: Batch, now: datetime) -> Q:
    """Accepted claims still holding their slot (as `_active_assignments` times them); the
    queryset needs the `has_submitted` annotation."""
    fresh = now - timedelta(seconds=batch.assignment_duration_seconds)
    first = now - timedelta(seconds=first_claim_seconds(batch))
    return Q(accepted_at__gte=fresh) & (Q(accepted_at__gte=first) | Q(has_submitted=True))


def _live_filters(holds: Q) -> dict[str, Q]:
    accepted = Q(state=AssignmentState.ACCEPTED)
    return {
        "working": accepted & holds,
        "timed_out": accepted & ~holds,
        "returned": Q(state=AssignmentState.ABANDONED),
        "submitted": Q(state=AssignmentState.SUBMITTED),
        "approved": Q(state=AssignmentState.APPROVED),
        "rejected": Q(state=AssignmentState.REJECTED),
    }


def _state(row: Assignment, holds: bool) -> str:
    if row.state == AssignmentState.ACCEPTED:
        return "working" if holds else "timed_out"
    return "returned" if row.state == AssignmentState.ABANDONED else row.state


def batch_live_status(*, batch: Batch, now: datetime | None = None) -> LiveStatus:
    """Counts by live state (one query) and the newest `ROWS` assignments (one query)."""
    now = now or timezone.now()
    holds = _holds(batch, now)
    submitted = Assignment.objects.filter(
        worker=OuterRef("worker"), hit__batch=batch, state__in=COUNTED_STATES
    )
    mine = Assignment.objects.filter(hit__batch=batch).annotate(has_submitted=Exists(submitted))
    counts = mine.aggregate(
        **{state: Count("pk", filter=q) for state, q in _live_filters(holds).items()}
    )
    rows = []
    newest = mine.annotate(
        holds=ExpressionWrapper(holds, output_field=BooleanField())
    ).select_related("worker", "hit")
    for a in newest.order_by("-accepted_at", "-pk")[:ROWS]:
        end = a.submitted_at or (now if a.state == AssignmentState.ACCEPTED else a.accepted_at)
        rows.append(
            LiveRow(
                assignment=a.pk,
                hit=a.hit.position + 1,
                worker=worker_pseudonym(
                    provider=a.worker.provider, external_id=a.worker.external_id
                ),
                state=_state(a, a.holds),
                confirmed=a.confirmed,
                accepted_at=a.accepted_at,
                started_at=a.started_at,
                submitted_at=a.submitted_at,
                elapsed_seconds=max(0, int((end - a.accepted_at).total_seconds())),
            )
        )
    return LiveStatus(batch=batch.pk, status=batch.status, now=now, counts=counts, rows=rows)
