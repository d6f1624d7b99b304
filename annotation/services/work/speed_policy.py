"""Implausibly fast work held for review (issue 27), a run setting every flow shares
(`annotation.run_settings.HOLD_FAST`): a submitted assignment whose active time per
item (accept, or the page's first answer, to submit, over the HIT's questions) is under
`hold_fast_seconds_per_item` gets a review before it is paid. It runs in the batch's approval
policy (`reviews_hold_by_policy`), before our auto-approval and periodically before a
platform's own. 0 (the default): fast work is only flagged on the dashboard."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Count

from annotation.models import Assignment, Batch, Question, Run
from annotation.providers import provider_for
from annotation.run_settings import HOLD_FAST, run_settings

SETTING = HOLD_FAST.key
POLICY = "fast_work"  # a held review's reason names its policy


def speed_limit(run: Run) -> float:
    """Seconds per item under which work is held; 0: nothing is held (runs made before the
    setting included)."""
    return run_settings(run).hold_fast_seconds_per_item


def speed_rule(run: Run) -> str:
    """The run's rule in words, for the pages where work is launched and reviewed."""
    limit = speed_limit(run)
    if not limit:
        return (
            f"Fast work is flagged, not held: set the run's {SETTING} to hold work faster "
            "than that many seconds per item for review before it is paid."
        )
    return (
        f"Work faster than {limit:g} s per item (active time over the HIT's questions) is held "
        f"for review before it is paid (the run's {SETTING})."
    )


def speed_hold_reasons(
    *, batch: Batch, assignments: list[Assignment]
) -> dict[int, list[dict[str, Any]]]:
    """The reasons to hold each assignment of `batch` that was implausibly fast."""
    limit = speed_limit(batch.run)
    if not limit or not assignments:
        return {}
    items = dict(
        Question.objects.filter(hit_id__in={a.hit_id for a in assignments})
        .values("hit_id")
        .annotate(n=Count("pk"))
        .values_list("hit_id", "n")
    )
    held: dict[int, list[dict[str, Any]]] = {}
    for assignment in assignments:
        begin = assignment.started_at or assignment.accepted_at
        n = items.get(assignment.hit_id, 0)
        if assignment.submitted_at is None or begin is None or not n:
            continue
        seconds = max(0.0, (assignment.submitted_at - begin).total_seconds())
        if seconds / n < limit:
            held[assignment.pk] = [
                {
                    "policy": POLICY,
                    "seconds": round(seconds, 1),
                    "items": n,
                    "seconds_per_item": round(seconds / n, 2),
                    "limit": limit,
                }
            ]
    return held


def speed_warnings(*, batch: Batch) -> list[str]:
    """A platform that pays on its own (`approves_itself`) sooner than the periodic policy
    runs could pay fast work before it is held."""
    if not speed_limit(batch.run) or not provider_for(batch.provider).approves_itself:
        return []
    every = settings.CELERY_BEAT_SCHEDULE["auto-approve"]["schedule"]
    assert isinstance(every, float), "the policy's period is a number of seconds"
    if batch.auto_approval_delay_seconds >= 2 * every:
        return []
    return [
        f"the platform approves work {batch.auto_approval_delay_seconds} s after submission, "
        f"but the approval policy (the run's {SETTING}) runs every {every:g} s "
        "(CROWDVL_AUTO_APPROVE_SECONDS): fast work may be paid before it is held"
    ]
