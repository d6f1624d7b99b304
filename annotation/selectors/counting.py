"""Which work counts. One definition, used by every flow's agreement, triples and positives,
by pool membership and by HIT and batch completion."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotation.flow_registry import disjoint_stages, stage_label
from annotation.models import Assignment, AssignmentState, Batch, PoolMembership, Run, Worker

COUNTED_STATES = (AssignmentState.SUBMITTED, AssignmentState.APPROVED)


def counted(prefix: str = "") -> Q:
    """Assignments (reached through `prefix`, e.g. "answers__assignment__") whose work counts:
    submitted or approved, confirmed by their provider, and not excluded."""
    return Q(
        **{
            f"{prefix}state__in": COUNTED_STATES,
            f"{prefix}confirmed": True,
            f"{prefix}excluded": False,
        }
    )


def counted_reviewed(prefix: str = "") -> Q:
    """Answers (reached through `prefix`, e.g. "questions__answers__") whose work counts and
    is not held by review: no review, or one approved by a person or closed by the provider's
    auto-approval (whose policy then set `excluded`)."""
    return counted(f"{prefix}assignment__") & (
        Q(**{f"{prefix}assignment__review__isnull": True})
        | Q(**{f"{prefix}assignment__review__status__in": ("approved", "auto_approved")})
    )


def earlier_stages(stage: str) -> tuple[str, ...]:
    """The stages of `stage`'s disjoint group that come before it (BISON stage 3: stage 2)."""
    group = disjoint_stages(stage)
    return group[: group.index(stage)] if stage in group else ()


def pool_bar_reason(*, run: Run, worker: Worker, stage: str) -> str | None:
    """Why `worker` may not work on `stage` of `run`, or None if they may.

    Barred: a member of another stage's pool, or anyone whose work in an earlier stage the
    provider confirmed (a selector must never verify their own captions). Work not yet
    confirmed bars no one (issue 25): it is a claim made under an id, which anyone can forge to
    lock the id's owner out of the other stage. If the owner did do both stages, confirming the
    earlier stage's work excludes the later (`assignment_confirm`), and only confirmed
    selections become triples to verify.
    """
    membership = PoolMembership.objects.filter(run=run, worker=worker).first()
    if membership is not None and membership.stage != stage:
        return (
            f"worker {worker.external_id} already works on {membership.get_stage_display()} "
            f"in run {run.pk}; the two stages' workers must be different people"
        )
    earlier = earlier_stages(stage)
    if (
        earlier
        and Assignment.objects.filter(
            worker=worker,
            hit__batch__run=run,
            hit__batch__stage__in=earlier,
            state__in=COUNTED_STATES,
            confirmed=True,
        ).exists()
    ):
        names = ", ".join(stage_label(s) for s in earlier)
        return (
            f"worker {worker.external_id} submitted work on {names} in run {run.pk}; "
            "the two stages' workers must be different people"
        )
    return None


def pool_members_ungranted(*, batch: Batch) -> QuerySet[PoolMembership]:
    """Pool memberships of `batch`'s stage whose worker has counted work in `batch` and whose
    provider-side pool mark was not granted yet (MTurk qualifications, Prolific groups)."""
    return PoolMembership.objects.filter(
        run=batch.run,
        stage=batch.stage,
        worker__provider=batch.provider,
        granted_at__isnull=True,
        worker__assignments__hit__batch=batch,
        worker__assignments__state__in=COUNTED_STATES,
        worker__assignments__confirmed=True,
        worker__assignments__excluded=False,
    ).distinct()
