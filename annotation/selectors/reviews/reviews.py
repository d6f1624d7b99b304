"""The review queue: held work by MTurk's auto-approval deadline, the nearest first."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, Q, QuerySet
from django.utils import timezone

from annotation.models import Batch, Hit, Review, ReviewStatus, Run
from annotation.selectors.reviews.review_reasons import reviews_reason_sentences
from annotation.services.work.speed_policy import POLICY as SPEED_POLICY

DUE_SOON = timedelta(hours=24)


# How the open reviews can be ordered: the provider's payment deadline (the default: the
# nearest first), how long the work has been held, or by batch.
SORTS = {
    "deadline": (F("assignment__auto_approve_at").asc(nulls_last=True), "created_at"),
    "held": ("created_at",),
    "batch": ("assignment__hit__batch_id", "created_at"),
}


def review_queue_view(
    *, now: datetime | None = None, sort: str = "deadline", runs: QuerySet[Run] | None = None
) -> dict[str, Any]:
    """Open reviews sorted by deadline (no deadline last, then oldest first) unless `sort`
    says otherwise (SORTS), each flagged
    `due_soon` within 24 hours of the provider paying on its own and `overdue` past it; the
    reviews MTurk closed by paying first; and HITs whose rejected work still waits for a new
    HIT or, once their batch ended, never got one."""
    now = now or timezone.now()
    # Only the given runs' reviews and HITs (a page passes the user's; None: all of them).
    in_runs = Q() if runs is None else Q(assignment__hit__batch__run__in=runs)
    reviews = list(
        Review.objects.filter(in_runs, status=ReviewStatus.OPEN)
        .select_related("assignment__worker", "assignment__hit__batch")
        .order_by(*SORTS.get(sort, SORTS["deadline"]))
    )
    # The reasons in the sentences the review page shows (one wording for both).
    sentences = reviews_reason_sentences(reviews)
    rows = []
    for review in reviews:
        deadline = review.assignment.auto_approve_at
        rows.append(
            {
                "review": review,
                "reasons": sentences[review.pk],
                "deadline": deadline,
                "overdue": deadline is not None and deadline <= now,
                "due_soon": deadline is not None and now < deadline <= now + DUE_SOON,
            }
        )
    auto = (
        Review.objects.filter(in_runs, status=ReviewStatus.AUTO_APPROVED)
        .select_related("assignment__worker", "assignment__hit__batch")
        .order_by("-decided_at")[:50]
    )
    stuck = (
        Hit.objects.filter(
            Q() if runs is None else Q(batch__run__in=runs),
            cannot_grow_at__isnull=False,
            reoffered_as__isnull=True,
        )
        .select_related("batch")
        .order_by("cannot_grow_at")
    )
    return {
        "sort": sort if sort in SORTS else "deadline",
        "sorts": list(SORTS),
        "rows": rows,
        "due_soon": sum(r["due_soon"] for r in rows),
        "overdue": sum(r["overdue"] for r in rows),
        "auto_approved": list(auto),
        "stuck": list(stuck),
    }


def reviews_held_fast_count(*, run: Run, batch: Batch | None = None) -> int:
    """How many assignments of `run` (or of `batch`) the speed rule held for review."""
    reviews = Review.objects.filter(assignment__hit__batch__run=run)
    if batch is not None:
        reviews = reviews.filter(assignment__hit__batch=batch)
    # Read in Python: SQLite (the embedded default) has no JSON containment lookup.
    return sum(
        any(isinstance(r, dict) and r.get("policy") == SPEED_POLICY for r in reasons)
        for reasons in reviews.values_list("reasons", flat=True)
    )
