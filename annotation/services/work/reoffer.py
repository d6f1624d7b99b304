"""Re-offering work that stopped counting on a HIT the provider will not grow.

MTurk refuses to add assignments past some limits (a HIT created with fewer than 10 cannot
reach 10); the items of such a HIT still need their judgments, so they go to a new HIT of the
same batch asking only for the missing ones. Once the batch has ended this is reported instead
(dashboard, review queue), since nothing can be offered any more.
"""

from __future__ import annotations

import random
from datetime import datetime

from django.db import transaction
from django.db.models import Max, QuerySet
from django.utils import timezone

from annotation.models import Batch, BatchStatus, EventAction, Hit, Question
from annotation.providers import provider_for
from annotation.selectors.counting import counted
from annotation.services.events import event_record
from annotation.services.runs.batches import balanced_sides
from annotation.services.work.recount import hit_recount
from annotation.tasktypes import task_type_for


def hits_stuck(*, batch: Batch) -> QuerySet[Hit]:
    """HITs whose missing work the provider will not take and that are not re-offered yet."""
    return batch.hits.filter(cannot_grow_at__isnull=False, reoffered_as__isnull=True)


def batch_ended(batch: Batch, now: datetime | None = None) -> bool:
    return batch.status == BatchStatus.EXPIRED or batch.past_lifetime(now or timezone.now())


def hits_reoffer(*, batch: Batch, now: datetime | None = None) -> list[Hit]:
    """Move the items of every stuck HIT of `batch` to a new HIT that asks for exactly the
    missing judgments (sides drawn afresh where the task draws them), and publish it where the
    provider keeps its own HITs. Safe to run again: a HIT is re-offered once."""
    if batch_ended(batch, now) or not hits_stuck(batch=batch).exists():
        return []
    made: list[Hit] = []
    with transaction.atomic():
        Batch.objects.select_for_update().get(pk=batch.pk)  # one re-offer at a time
        todo: list[tuple[Hit, int]] = []
        for hit in hits_stuck(batch=batch).select_related("batch").order_by("position"):
            missing = hit.capacity - hit.assignments.filter(counted()).count()
            if missing <= 0:  # the work came back (e.g. a reviewer approved it after all)
                Hit.objects.filter(pk=hit.pk).update(cannot_grow_at=None)
                continue
            todo.append((hit, missing))
        # Over the daily cap nothing is made (publishing would refuse it after the review
        # decision was taken): the HITs stay stuck and a later run re-offers them.
        if todo and _reoffer_refusal(batch=batch, hits=len(todo)):
            return []
        for hit, missing in todo:
            last = batch.hits.aggregate(p=Max("position"))["p"] or 0
            new = Hit.objects.create(batch=batch, position=last + 1, max_assignments=missing)
            questions = list(hit.questions.order_by("position"))
            draws = task_type_for(batch.stage).draws_sides
            # A simulated crowd's re-offer follows the batch's seed, as its layout does.
            draw = (
                random.Random(f"reoffer:{batch.seed}:{hit.position}")
                if provider_for(batch.provider).simulated
                else None
            )
            sides = balanced_sides(len(questions), draw=draw) if draws else [False] * len(questions)
            Question.objects.bulk_create(
                [
                    Question(hit=new, item=q.item, position=q.position, swapped=side)
                    for q, side in zip(questions, sides, strict=True)
                ]
            )
            Hit.objects.filter(pk=hit.pk).update(reoffered_as=new)
            hit.reoffered_as = new
            hit_recount(hit=hit)
            event_record(
                action=EventAction.HIT_REOFFERED,
                run=batch.run,
                batch=batch,
                data={"hit": hit.pk, "new_hit": new.pk, "assignments": missing},
            )
            made.append(new)
    crowd = provider_for(batch.provider)
    if made and crowd.remote:
        crowd.publish_remote(batch=batch)  # creates the HITs not yet at the provider
    return made


def _reoffer_refusal(*, batch: Batch, hits: int) -> str | None:
    """Why `hits` new HITs of a remote provider's `batch` may not be made now (the daily cap),
    checked as publishing them will check it (every HIT not yet at the provider), or None."""
    crowd = provider_for(batch.provider)
    if not crowd.remote:
        return None
    waiting = batch.hits.filter(provider_hit_id="").count() + hits
    estimate = crowd.estimate(
        hits=waiting, assignments_per_hit=batch.assignments_per_hit, reward=batch.reward
    )
    return crowd.spend_refusal(
        amount=estimate.total, what=f"re-offering {hits} HITs of batch {batch.pk}"
    )


def hits_reoffer_all() -> int:
    """Every open batch's stuck HITs (periodic, beside synchronisation)."""
    # In pk order: the same HITs made in the same order on every database.
    batches = (
        Batch.objects.filter(
            hits__cannot_grow_at__isnull=False,
            hits__reoffered_as__isnull=True,
            status__in=(BatchStatus.PUBLISHED, BatchStatus.COMPLETED),
        )
        .distinct()
        .order_by("pk")
    )
    return sum(len(hits_reoffer(batch=batch)) for batch in batches)
