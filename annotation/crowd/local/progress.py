"""What an invited worker's pages list: the batches of the run they may take (none of another
stage's pool when the run keeps stages' workers apart), each with their progress, and their
tasks in progress."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Count
from django.utils import timezone

from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    Hit,
    HitStatus,
    PoolMembership,
    Run,
    Worker,
)
from annotation.selectors.counting import COUNTED_STATES
from annotation.services.work.slots import late_reason

PROVIDER = "local"


@dataclass(frozen=True)
class BatchProgress:
    batch: Batch
    done: int  # tasks this worker submitted in the batch
    left: int  # open tasks of the batch this worker has not taken (an upper bound)
    reward: Decimal  # pay per task


def worker_batches(*, run: Run, worker: Worker) -> list[BatchProgress]:
    """Published local batches of `run` that `worker` may take, with their progress; a batch of
    a stage whose pool they are not in (another stage's, in a run with disjoint pools) is left
    out rather than offered and then refused."""
    batches = Batch.objects.filter(run=run, provider=PROVIDER, status=BatchStatus.PUBLISHED)
    pool = PoolMembership.objects.filter(run=run, worker=worker).values_list("stage", flat=True)
    stage = pool.first()
    if stage is not None:
        batches = batches.filter(stage=stage)
    mine = Assignment.objects.filter(worker=worker, hit__batch__in=batches)
    done = dict(
        mine.filter(state__in=COUNTED_STATES)
        .values_list("hit__batch")
        .annotate(n=Count("pk"))
        .values_list("hit__batch", "n")
    )
    left = dict(
        Hit.objects.filter(batch__in=batches, status=HitStatus.OPEN)
        .exclude(assignments__worker=worker)
        .values_list("batch")
        .annotate(n=Count("pk"))
        .values_list("batch", "n")
    )
    return [
        BatchProgress(batch=b, done=done.get(b.pk, 0), left=left.get(b.pk, 0), reward=b.reward)
        for b in batches.order_by("pk")
    ]


def worker_open_tasks(*, run: Run, worker: Worker, now: datetime | None = None) -> list[Assignment]:
    """`worker`'s tasks in progress in `run`'s local batches, published or paused (open work
    of a paused batch may finish), that may still be submitted: their way back to the
    answers they gave (issue 46)."""
    now = now or timezone.now()
    open_ones = Assignment.objects.filter(
        worker=worker,
        state=AssignmentState.ACCEPTED,
        hit__batch__run=run,
        hit__batch__provider=PROVIDER,
        hit__batch__status__in=(BatchStatus.PUBLISHED, BatchStatus.PAUSED),
    ).select_related("hit__batch")
    return [a for a in open_ones.order_by("pk") if late_reason(a, a.hit.batch, now) is None]
