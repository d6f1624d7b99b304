"""Giving a published batch more: time (`batch_extend`, expired HITs reopen) or assignments
(`hit_add_assignments`, `batch_add_assignments`), through the batch's crowd provider, each
recorded by an event and safe to repeat."""

from __future__ import annotations

from django.db import transaction

from annotation.errors import ServiceError
from annotation.models import Batch, BatchStatus, EventAction, Hit, HitStatus, SlotsAdded
from annotation.providers import provider_for
from annotation.selectors.installation import installation_token
from annotation.services.events import event_record
from annotation.services.runs.runs import run_status_follow
from pipeline.errors import InputError


def batch_extend(*, batch: Batch, seconds: int) -> Batch:
    """Keep the batch's HITs on offer for `seconds` from now (expired HITs reopen)."""
    if batch.status not in (BatchStatus.PUBLISHED, BatchStatus.EXPIRED, BatchStatus.COMPLETED):
        raise ServiceError(f"batch {batch.pk} is {batch.status}; publish it first")
    provider_for(batch.provider).extend(batch=batch, seconds=seconds)
    with transaction.atomic():
        batch.hits.filter(status=HitStatus.EXPIRED).update(status=HitStatus.OPEN)
        if batch.status == BatchStatus.EXPIRED:
            Batch.objects.filter(pk=batch.pk).update(status=BatchStatus.PUBLISHED)
        event_record(
            action=EventAction.BATCH_EXTENDED, run=batch.run, batch=batch, data={"seconds": seconds}
        )
        batch.refresh_from_db()
        run_status_follow(run=batch.run, batch=batch)
    return batch


def hit_add_assignments(*, hit: Hit, count: int) -> Hit:
    """Let `count` more workers do `hit`. The provider token is derived from the new total,
    so retrying the same request does not add twice."""
    if count < 1:
        raise InputError("must be at least 1", field="count")
    total = hit.extra_assignments + count
    provider = provider_for(hit.batch.provider)
    provider.spend_check(
        amount=provider.slot_cost(batch=hit.batch) * count,
        what=f"{count} more assignments on HIT {hit.pk}",
    )
    provider.add_assignments(hit=hit, count=count, token=installation_token("add", hit.pk, total))
    with transaction.atomic():
        Hit.objects.filter(pk=hit.pk).update(extra_assignments=total, status=HitStatus.OPEN)
        hit.refresh_from_db()
        # The daily cap's row; the same total again (a retried request) added nothing there.
        SlotsAdded.objects.get_or_create(hit=hit, extra_total=total, defaults={"added": count})
        event_record(
            action=EventAction.HIT_ASSIGNMENTS_ADDED,
            run=hit.batch.run,
            batch=hit.batch,
            data={"hit": hit.pk, "added": count, "extra_total": total},
        )
    return hit


def batch_add_assignments(*, batch: Batch, count: int) -> list[Hit]:
    """`hit_add_assignments` on each of the batch's open HITs; the HITs that got more."""
    hits = list(batch.hits.filter(status=HitStatus.OPEN).select_related("batch"))
    for hit in hits:
        hit_add_assignments(hit=hit, count=count)
    return hits
