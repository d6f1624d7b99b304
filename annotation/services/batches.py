"""Packaging a stage's items into HITs and publishing them through a crowd provider."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.crowd.base import Progress
from annotation.errors import ServiceError
from annotation.models import (
    Batch,
    BatchStatus,
    Hit,
    HitStatus,
    Question,
    Run,
    RunStatus,
    Stage,
    default_qualifications,
)
from annotation.services.events import event_record
from annotation.services.runs import run_set_status
from annotation.tasktypes import task_type_for
from pipeline.errors import InputError
from pipeline.money import dollars

QUALIFICATION_KEYS = {"min_approved_hits", "min_approval_percent", "locales", "custom"}
COMPARATORS = {
    "LessThan",
    "LessThanOrEqualTo",
    "GreaterThan",
    "GreaterThanOrEqualTo",
    "EqualTo",
    "NotEqualTo",
    "Exists",
    "DoesNotExist",
}


def _check_qualifications(rules: dict[str, Any]) -> dict[str, Any]:
    unknown = set(rules) - QUALIFICATION_KEYS
    if unknown:
        raise InputError(
            f"unknown qualification rule(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(QUALIFICATION_KEYS))}",
            field="qualifications",
        )
    merged = {**default_qualifications(), **rules}
    pct = merged["min_approval_percent"]
    if not isinstance(pct, int | float) or not 0 <= pct <= 100:
        raise InputError("must be a number from 0 to 100", field="min_approval_percent")
    if not isinstance(merged["min_approved_hits"], int) or merged["min_approved_hits"] < 0:
        raise InputError("must be a whole number >= 0", field="min_approved_hits")
    locales = merged["locales"]
    if not isinstance(locales, list) or not all(
        isinstance(c, str) and len(c) == 2 and c.isupper() for c in locales
    ):
        raise InputError("must be a list of ISO 3166 two-letter codes", field="locales")
    for n, custom in enumerate(merged.get("custom", [])):
        if (
            not isinstance(custom, dict)
            or not isinstance(custom.get("id"), str)
            or not custom["id"]
        ):
            raise InputError("needs a qualification 'id'", record=n, field="custom")
        if custom.get("comparator") not in COMPARATORS:
            raise InputError(
                f"comparator must be one of {', '.join(sorted(COMPARATORS))}",
                record=n,
                field="custom",
            )
    return merged


def batch_create(
    *,
    run: Run,
    stage: str,
    provider: str,
    items_per_hit: int | None = None,
    assignments_per_hit: int | None = None,
    reward: Decimal | str | float = "0.10",
    lifetime_seconds: int = 7 * 24 * 3600,
    assignment_duration_seconds: int = 3600,
    qualifications: dict[str, Any] | None = None,
    seed: int = 0,
    limit: int | None = None,
    options: dict[str, Any] | None = None,
) -> Batch:
    """Pack the stage's unbatched items into HITs, in a seeded order, in one transaction."""
    from annotation.crowd import provider_for  # providers use batch services
    from annotation.services.bison import bison_triples_create

    if stage not in Stage.values:
        raise InputError(f"unknown stage {stage!r}", field="stage")
    provider_for(provider)  # unknown provider names fail here, before anything is written
    task = task_type_for(stage)
    items_per_hit = items_per_hit or task.default_items_per_hit
    assignments_per_hit = assignments_per_hit or task.default_assignments
    if items_per_hit < 1 or assignments_per_hit < 1:
        raise InputError("must be >= 1", field="items_per_hit/assignments_per_hit")
    value = dollars(reward, field="reward")
    rules = _check_qualifications(qualifications or {})

    with transaction.atomic():
        if stage == Stage.BISON_VERIFICATION:
            made = bison_triples_create(run=run)
            if made.selection_answers == 0:
                raise ServiceError(
                    f"run {run.pk} has no stage-2 results yet: publish stage 2 and collect "
                    "its answers before asking for stage 3"
                )
        items = list(task.items_for_batch(run=run).select_related("positive", "caption"))
        if not items:
            raise ServiceError(f"run {run.pk} has no items waiting for {stage}")
        random.Random(seed).shuffle(items)
        if limit is not None:
            items = items[:limit]
        batch = Batch.objects.create(
            run=run,
            stage=stage,
            provider=provider,
            title=task.title,
            items_per_hit=items_per_hit,
            assignments_per_hit=assignments_per_hit,
            reward=value,
            lifetime_seconds=lifetime_seconds,
            assignment_duration_seconds=assignment_duration_seconds,
            qualifications=rules,
            seed=seed,
            options=options or {},
        )
        plans = task.plan_hits(run=run, items=items, items_per_hit=items_per_hit, seed=seed)
        # Which side the positive is shown on is drawn here, on the server, and stays here.
        sides = random.Random(f"{seed}:{batch.pk}:sides")
        hits = Hit.objects.bulk_create([Hit(batch=batch, position=i) for i in range(len(plans))])
        Question.objects.bulk_create(
            [
                Question(
                    hit=hit,
                    item=item,
                    position=position,
                    swapped=stage == Stage.BISON_VERIFICATION and sides.random() < 0.5,
                )
                for hit, plan in zip(hits, plans, strict=True)
                for position, item in enumerate(plan)
            ],
            batch_size=5000,
        )
        event_record(
            action="batch.created",
            run=run,
            batch=batch,
            data={"hits": len(hits), "items": len(items), "provider": provider},
        )
    return batch


def batch_publish(*, batch: Batch, progress: Progress | None = None) -> Batch:
    from annotation.crowd import provider_for

    if batch.status != BatchStatus.DRAFT:
        raise ServiceError(f"batch {batch.pk} is {batch.status}, not draft")
    provider_for(batch.provider).publish(batch=batch, progress=progress)
    with transaction.atomic():
        Batch.objects.filter(pk=batch.pk).update(
            status=BatchStatus.PUBLISHED, published_at=timezone.now()
        )
        batch.refresh_from_db()
        run_status = (
            RunStatus.SELECTING if batch.stage == Stage.BISON_SELECTION else RunStatus.VERIFYING
        )
        if batch.run.status != run_status:
            run_set_status(run=batch.run, status=run_status, batch=batch.pk)
        event_record(action="batch.published", run=batch.run, batch=batch)
    return batch


def batch_expire(*, batch: Batch) -> Batch:
    from annotation.crowd import provider_for

    provider_for(batch.provider).expire(batch=batch)
    with transaction.atomic():
        batch.hits.filter(status=HitStatus.OPEN).update(status=HitStatus.EXPIRED)
        Batch.objects.filter(pk=batch.pk).update(status=BatchStatus.EXPIRED)
        batch.refresh_from_db()
        event_record(action="batch.expired", run=batch.run, batch=batch)
    return batch


def batch_refresh_status(*, batch: Batch) -> Batch:
    """Mark the batch completed when no HIT is open any more."""
    if (
        batch.status == BatchStatus.PUBLISHED
        and not batch.hits.filter(status=HitStatus.OPEN).exists()
    ):
        Batch.objects.filter(pk=batch.pk, status=BatchStatus.PUBLISHED).update(
            status=BatchStatus.COMPLETED
        )
        batch.refresh_from_db()
        event_record(action="batch.completed", run=batch.run, batch=batch)
    return batch
