"""A run's stage pools: which stage a worker works on in a run, so the stages that must be
done by different people (`disjoint_stages`) are."""

from __future__ import annotations

from annotation.errors import PoolConflict
from annotation.flow_registry import disjoint_stages
from annotation.models import Assignment, Batch, EventAction, PoolMembership, Run, Worker
from annotation.selectors.counting import counted, pool_bar_reason
from annotation.services.events import event_record
from annotation.services.work.recount import hit_recount
from annotation.services.work.slots import claims_unconfirmed


def pool_join(*, run: Run, worker: Worker, stage: str) -> PoolMembership:
    """Put `worker` in `stage`'s pool of `run`, or refuse if they work in another stage."""
    membership, created = PoolMembership.objects.get_or_create(
        run=run, worker=worker, defaults={"stage": stage}
    )
    if membership.stage != stage:
        raise PoolConflict(
            f"worker {worker.external_id} already works on {membership.get_stage_display()} "
            f"in run {run.pk}; the two stages' workers must be different people"
        )
    if created:
        event_record(action=EventAction.POOL_JOINED, run=run, worker=worker, data={"stage": stage})
    return membership


def pool_enter(*, batch: Batch, worker: Worker) -> None:
    """A claim's pool rule. A confirmed claim (local work) joins the stage's pool at once, or
    is refused for another stage's. A claim that starts unconfirmed (`claims_unconfirmed`:
    an id the provider has yet to confirm, which anyone may type) joins no pool: it must not
    bar the id's real owner from another stage. It is refused only where confirmed work
    decided (`pool_bar_reason`); its worker joins on confirmation (`assignment_confirm`)."""
    if claims_unconfirmed(batch):
        reason = pool_bar_reason(run=batch.run, worker=worker, stage=batch.stage)
        if reason:
            raise PoolConflict(reason)
    else:
        pool_join(run=batch.run, worker=worker, stage=batch.stage)


def pool_take(*, run: Run, worker: Worker, stage: str) -> None:
    """Put `worker` in `stage`'s pool on confirmed work. Their counted work in later stages of
    the run is excluded and they leave those pools: the stages' workers stay disjoint."""
    group = disjoint_stages(stage)
    later = group[group.index(stage) + 1 :] if stage in group else ()
    if later:
        for other in Assignment.objects.filter(
            counted(), worker=worker, hit__batch__run=run, hit__batch__stage__in=later
        ).select_related("hit__batch"):
            Assignment.objects.filter(pk=other.pk).update(excluded=True)
            event_record(
                action=EventAction.ASSIGNMENT_EXCLUDED,
                run=run,
                batch=other.hit.batch,
                assignment=other,
                worker=worker,
                data={"reason": f"the worker's {stage} work was confirmed"},
            )
            hit_recount(hit=other.hit)
        PoolMembership.objects.filter(run=run, worker=worker, stage__in=later).update(
            stage=stage, granted_at=None
        )
    pool_join(run=run, worker=worker, stage=stage)
