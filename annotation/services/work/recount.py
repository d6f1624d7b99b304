"""A HIT's and a batch's status recomputed from their work: complete when full, reopened
when work stopped counting."""

from __future__ import annotations

from annotation.models import Batch, BatchStatus, EventAction, Hit, HitStatus
from annotation.selectors.counting import counted
from annotation.services.events import event_record
from annotation.services.notifications import owner_notify
from annotation.services.runs.runs import run_status_follow


def batch_refresh_status(*, batch: Batch) -> Batch:
    """Mark the batch completed when no HIT is open any more."""
    if (
        batch.status == BatchStatus.PUBLISHED
        and not batch.hits.filter(status=HitStatus.OPEN).exists()
    ):
        done = Batch.objects.filter(pk=batch.pk, status=BatchStatus.PUBLISHED).update(
            status=BatchStatus.COMPLETED
        )
        batch.refresh_from_db()
        if done:  # this call completed it (another may have just done so)
            event_record(action=EventAction.BATCH_COMPLETED, run=batch.run, batch=batch)
            run_status_follow(run=batch.run, batch=batch)
            owner_notify(
                run_id=batch.run_id,
                subject=f"batch {batch.pk} completed",
                body=f"Every HIT of batch {batch.pk} ({batch.get_stage_display()}) has its "
                "answers.",
            )
    return batch


def hit_recount(*, hit: Hit) -> None:
    """Complete a HIT holding its capacity of counted work; reopen it (and its batch) when
    work stopped counting."""
    done = hit.assignments.filter(counted()).count()
    # A HIT whose missing work went to a new HIT (`reoffered_as`) is done with.
    full = done >= hit.capacity or hit.reoffered_as_id is not None
    status = HitStatus.COMPLETE if full else HitStatus.OPEN
    if hit.status != status and hit.status not in (HitStatus.EXPIRED, HitStatus.UNKNOWN):
        Hit.objects.filter(pk=hit.pk).update(status=status)
        hit.status = status
        if status == HitStatus.OPEN:
            reopened = Batch.objects.filter(pk=hit.batch_id, status=BatchStatus.COMPLETED).update(
                status=BatchStatus.PUBLISHED
            )
            if reopened:  # work on offer again: the run's stage is not done after all
                batch = Batch.objects.select_related("run").get(pk=hit.batch_id)
                run_status_follow(run=batch.run, batch=batch)
