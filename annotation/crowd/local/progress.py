"""What an invited worker's pages list: the batches of the run they may take (none of another
stage's pool when the run keeps stages' workers apart), each with their progress."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count

from annotation.models import (
    Assignment,
    Batch,
    BatchStatus,
    Hit,
    HitStatus,
    PoolMembership,
    Run,
    Worker,
)
from annotation.selectors.counting import COUNTED_STATES

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
