"""Packaging a stage's items into HITs and publishing them through a crowd provider.

Server-side providers need no remote step; a remote provider's HITs are created and read back
by its own package (`CrowdProvider.publish_remote`, `.sync`), which this module calls through
the provider interface, never the other way round.
"""

from __future__ import annotations

import random
import secrets
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.flow_registry import stage_label, stage_names
from annotation.models import (
    Batch,
    BatchStatus,
    EventAction,
    Hit,
    HitStatus,
    ImageSource,
    Job,
    Question,
    Run,
    default_qualifications,
)
from annotation.providers import provider_for
from annotation.selectors.datasets.image_availability import batch_images_check
from annotation.selectors.money.pay import fair_reward, pay_estimate
from annotation.services.checks import (
    check_batch_counts,
    check_batch_times,
    check_int,
    check_reward,
    check_run_stage,
)
from annotation.services.datasets.images import (
    batch_images_create,
    hit_images_create,
    images_cache_start,
    images_kept_apart,
)
from annotation.services.events import event_record
from annotation.services.jobs.jobs import Progress, job_fail, job_progress, job_start, job_succeed
from annotation.services.runs.gold import gold_warnings, item_images
from annotation.services.runs.runs import run_set_status, run_status_follow
from annotation.services.work.speed_policy import speed_warnings
from annotation.tasktypes import task_type_for
from annotation.tasktypes.base import RELAX_IMAGES
from pipeline.errors import InputError

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
    if isinstance(pct, bool) or not isinstance(pct, int | float) or not 0 <= pct <= 100:
        raise InputError("must be a number from 0 to 100", field="min_approval_percent")
    check_int(merged, "min_approved_hits", low=0, high=2**31 - 1)
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
    reward: Decimal | str | float | None = None,
    lifetime_seconds: int = 7 * 24 * 3600,
    assignment_duration_seconds: int = 3600,
    qualifications: dict[str, Any] | None = None,
    seed: int = 0,
    limit: int | None = None,
    options: dict[str, Any] | None = None,
    auto_approval_delay_seconds: int | None = None,
) -> Batch:
    """Pack the stage's unbatched items into HITs, in a seeded order, in one transaction.
    `auto_approval_delay_seconds` defaults to the task type's (or the model's) default."""
    if stage not in stage_names():
        raise InputError(f"unknown stage {stage!r}", field="stage")
    check_run_stage(kind=run.kind, stage=stage)  # another flow's stage would find no items
    # Unknown provider names fail here, before anything is written; the provider checks and
    # completes its own options (a panel's study-link settings).
    options = provider_for(provider).batch_options(options=dict(options or {}))
    task = task_type_for(stage)
    if options.get(RELAX_IMAGES.name) and not task.images_disjoint:
        raise InputError(
            f"{stage_label(stage)} shows no image twice to begin with: only an image-disjoint "
            "stage's rule can be relaxed",
            field=RELAX_IMAGES.name,
        )
    items_per_hit = items_per_hit or task.default_items_per_hit
    assignments_per_hit = assignments_per_hit or task.assignments_default(run=run, options=options)
    check_batch_counts(items_per_hit=items_per_hit, assignments_per_hit=assignments_per_hit)
    if assignments_per_hit < task.min_assignments:
        raise InputError(
            f"{task.title!r} needs at least {task.min_assignments} workers per HIT, got "
            f"{assignments_per_hit}",
            field="assignments_per_hit",
        )
    check_int({"seed": seed}, "seed", low=-(2**31), high=2**31 - 1)  # Batch.seed's column
    if limit is not None:
        check_int({"limit": limit}, "limit", low=1, high=2**31 - 1)
    value = check_reward(reward) if reward is not None else None
    rules = _check_qualifications(qualifications or {})
    check_batch_times(
        lifetime_seconds=lifetime_seconds,
        assignment_duration_seconds=assignment_duration_seconds,
        auto_approval_delay_seconds=auto_approval_delay_seconds,
        options=options or {},
    )
    if auto_approval_delay_seconds is None:
        auto_approval_delay_seconds = task.default_auto_approval_seconds

    with transaction.atomic():
        task.prepare_batch(run=run)
        items = list(
            task.items_for_batch(run=run, options=options or {}).select_related(
                "positive", "caption"
            )
        )
        if not items:
            raise ServiceError(f"run {run.pk} has no items waiting for {stage}")
        random.Random(seed).shuffle(items)
        if limit is not None:
            items = items[:limit]
        # No reward given: the paper's, never under the installation's minimum hourly pay at
        # the expected time (set below, once the HITs' size is known; issue 46).
        fair = value is None
        paper = (
            task.default_reward(items_per_hit=items_per_hit, options=options or {})
            if fair
            else None
        )
        if value is None:
            value = paper or Decimal("0.01")
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
            **(
                {"auto_approval_delay_seconds": auto_approval_delay_seconds}
                if auto_approval_delay_seconds is not None
                else {}
            ),
        )
        # What a worker could exploit (positions of gold items, which side the positive is
        # on) comes from a secret source, never from the run's public seed or the ids; what
        # was drawn is stored (questions, and the layout seed in the staff-only event log).
        simulated = provider_for(provider).simulated
        layout_seed = layout_seed_draw(seed=seed, simulated=simulated)
        plans = task.plan_hits(
            run=run,
            items=items,
            items_per_hit=items_per_hit,
            seed=layout_seed,
            options=options or {},
        )
        if fair:  # the largest HIT, gold items included, pays the minimum at the time declared
            expected = task.seconds_per_item(options=options or {}) * max(len(p) for p in plans)
            declared = provider_for(provider).declared_seconds(seconds=expected)
            batch.reward = check_reward(max(paper or Decimal("0"), fair_reward(seconds=declared)))
            Batch.objects.filter(pk=batch.pk).update(reward=batch.reward)
        hits = Hit.objects.bulk_create([Hit(batch=batch, position=i) for i in range(len(plans))])
        placed = [
            (hit, position, item)
            for hit, plan in zip(hits, plans, strict=True)
            for position, item in enumerate(plan)
        ]
        sides = (
            balanced_sides(len(placed), draw=random.Random(layout_seed) if simulated else None)
            if task.draws_sides
            else [False] * len(placed)
        )
        Question.objects.bulk_create(
            [
                Question(hit=hit, item=item, position=position, swapped=swapped)
                for (hit, position, item), swapped in zip(placed, sides, strict=True)
            ],
            batch_size=5000,
        )
        # Every question's images, gold items' included: an image without a token of the
        # batch would show as "Unavailable" and single its question out.
        shown = [item for _, _, item in placed]
        image_ids = {i.positive_id for i in shown} | {i.negative_id for i in shown if i.negative_id}
        batch_images_create(batch=batch, image_ids=image_ids)
        if task.images_disjoint:
            hit_images_create(
                hits=[
                    (hit, {pk for item in plan for pk in item_images(item)})
                    for hit, plan in zip(hits, plans, strict=True)
                ]
            )
        # Local files are read on request; simulated workers never load an image.
        if run.dataset.image_source != ImageSource.LOCAL_DIR and not simulated:
            images_cache_start(batch=batch)
        event_record(
            action=EventAction.BATCH_CREATED,
            run=run,
            batch=batch,
            data={
                "hits": len(hits),
                "items": len(items),
                "provider": provider,
                "layout_seed": layout_seed,
            },
        )
    return batch


def layout_seed_draw(*, seed: int, simulated: bool) -> int:
    """The seed of a batch's hidden layout (gold copies and positions, sides): a secret draw
    for people. A simulated crowd's batch follows its public seed instead, so the same
    simulation gives the same data (the quality sweep's figures are reproducible); its
    workers are programs, so there is no one for the seed to tell anything."""
    if simulated:
        return random.Random(f"layout:{seed}").randrange(2**63)
    return secrets.randbits(63)


def balanced_sides(n: int, *, draw: random.Random | None = None) -> list[bool]:
    """Half the positives on the right, in an order no one can predict (an odd one out is a
    coin flip), so neither side is a better guess; `draw` only for a simulated crowd's
    batch (see `layout_seed_draw`)."""
    draw = draw or secrets.SystemRandom()
    sides = [True] * (n // 2) + [False] * (n // 2)
    if n % 2:
        sides.append(draw.random() < 0.5)
    draw.shuffle(sides)
    return sides


def batch_discard(*, batch: Batch) -> None:
    """Delete a draft batch (never published): its items go back to waiting for a batch."""
    if batch.status != BatchStatus.DRAFT:
        raise ServiceError(f"batch {batch.pk} is {batch.status}: only a draft can be discarded")
    with transaction.atomic():
        event_record(
            action=EventAction.BATCH_DISCARDED,
            run=batch.run,
            data={"batch": batch.pk, "stage": batch.stage},
        )
        batch.delete()


def batch_publish(*, batch: Batch, progress: Progress | None = None) -> Batch:
    if batch.status != BatchStatus.DRAFT:
        raise ServiceError(f"batch {batch.pk} is {batch.status}, not draft")
    crowd = provider_for(batch.provider)
    if crowd.remote:
        crowd.publish_remote(batch=batch, progress=progress)
    with transaction.atomic():
        Batch.objects.filter(pk=batch.pk).update(
            status=BatchStatus.PUBLISHED, published_at=timezone.now()
        )
        batch.refresh_from_db()
        run_status = task_type_for(batch.stage).publish_status
        if batch.run.status != run_status:
            run_set_status(run=batch.run, status=run_status, batch=batch.pk)
        event_record(
            action=EventAction.BATCH_PUBLISHED,
            run=batch.run,
            batch=batch,
            data={"warnings": batch_warnings(batch=batch)},
        )
    return batch


def batch_publish_request(*, batch: Batch) -> tuple[Batch, Job | None]:
    """Publish from the console, the API or the command line: never with images workers could
    not see; a remote provider publishes in the background (the job it returns), the others
    at once."""
    batch_images_check(batch=batch)
    job = provider_for(batch.provider).publish_start(batch=batch)
    if job is None:
        batch = batch_publish(batch=batch)
    return batch, job


def batch_warnings(*, batch: Batch) -> list[str]:
    """What to know before publishing `batch`: its task type's warnings, and pay below the
    minimum hourly rate (paid providers refuse to publish it without `allow_low_pay`)."""
    task = task_type_for(batch.stage)
    warnings = task.publish_warnings(batch=batch)
    if task.gold_kinds:
        warnings += gold_warnings(batch=batch)
    warnings += speed_warnings(batch=batch)
    if task.images_disjoint and not images_kept_apart(batch):
        warnings.append(
            "image-disjointness relaxed (a trusted pool only): a worker may see an image in "
            "two HITs and answer the second from memory; the datasheet records it"
        )
    if not provider_for(batch.provider).simulated:
        estimate = pay_estimate(batch=batch)
        if estimate.below_minimum:
            warnings.append(f"pay below the minimum: {estimate.describe()}")
    return warnings


def batch_publish_job(*, job_id: int) -> None:
    """The publishing job of a remote provider (`CrowdProvider.publish_start`): safe to run
    again; HITs already created are not created twice."""
    job = job_start(job_id=job_id, message="publishing to the crowd provider")
    batch = Batch.objects.get(pk=job.params["batch"])
    try:
        if batch.status == BatchStatus.DRAFT:
            batch_publish(
                batch=batch,
                progress=lambda pct, msg: job_progress(job_id=job_id, progress=pct, message=msg),
            )
    except (InputError, ServiceError) as exc:
        job_fail(job_id=job_id, error=str(exc))
        raise
    hits = batch.hits.exclude(provider_hit_id="").count()
    job_succeed(
        job_id=job_id,
        result={"batch": batch.pk, "hits": hits, "hit_type": batch.provider_hit_type_id},
        message=f"{hits} HITs on {batch.provider}",
    )


def batch_sync(*, batch: Batch) -> int:
    """Bring a remote provider's results into the database; how many assignments changed."""
    crowd = provider_for(batch.provider)
    return crowd.sync(batch=batch) if crowd.remote else 0


def batch_pause(*, batch: Batch) -> Batch:
    """No new claims (and, at a platform with a pause, no new workers sent); work in progress
    may finish. Pausing a paused batch changes nothing."""
    if batch.status == BatchStatus.PAUSED:
        return batch
    if batch.status != BatchStatus.PUBLISHED:
        raise ServiceError(f"batch {batch.pk} is {batch.status}: only a published batch pauses")
    provider_for(batch.provider).pause(batch=batch)
    return _status_record(batch=batch, status=BatchStatus.PAUSED, action=EventAction.BATCH_PAUSED)


def batch_resume(*, batch: Batch) -> Batch:
    """Take claims again after `batch_pause`."""
    if batch.status == BatchStatus.PUBLISHED:
        return batch
    if batch.status != BatchStatus.PAUSED:
        raise ServiceError(f"batch {batch.pk} is {batch.status}, not paused")
    provider_for(batch.provider).resume(batch=batch)
    return _status_record(
        batch=batch, status=BatchStatus.PUBLISHED, action=EventAction.BATCH_RESUMED
    )


def _status_record(*, batch: Batch, status: str, action: EventAction) -> Batch:
    """The batch's new status and its event row, in one transaction."""
    with transaction.atomic():
        Batch.objects.filter(pk=batch.pk).update(status=status)
        batch.refresh_from_db()
        event_record(action=action, run=batch.run, batch=batch)
    return batch


def batch_expire(*, batch: Batch) -> Batch:
    provider_for(batch.provider).expire(batch=batch)
    with transaction.atomic():
        batch.hits.filter(status=HitStatus.OPEN).update(status=HitStatus.EXPIRED)
        Batch.objects.filter(pk=batch.pk).update(status=BatchStatus.EXPIRED)
        batch.refresh_from_db()
        event_record(action=EventAction.BATCH_EXPIRED, run=batch.run, batch=batch)
        run_status_follow(run=batch.run, batch=batch)
    return batch


def batches_stop(*, run: Run | None = None, reason: str) -> dict[str, Any]:
    """The kill switch: expire every batch still on offer, of `run` or of the whole
    installation, at every provider, and every draft with HITs created at its provider (its
    publishing crashed part-way). One batch failing does not stop the others; what failed
    is returned (and in the event log), so the switch can be pressed again."""
    if not reason.strip():
        raise InputError("stopping every HIT needs a reason", field="reason")
    # A HIT is (maybe) at its provider once creating it was tried, even if its id was lost.
    at_provider = Hit.objects.filter(batch=OuterRef("pk")).filter(
        Q(create_attempted_at__isnull=False) | Q(provider_hit_id__gt="")
    )
    batches = Batch.objects.alias(at_provider=Exists(at_provider)).filter(
        Q(status__in=(BatchStatus.PUBLISHED, BatchStatus.PAUSED, BatchStatus.COMPLETED))
        | Q(status=BatchStatus.DRAFT, at_provider=True)
    )
    if run is not None:
        batches = batches.filter(run=run)
    stopped: list[int] = []
    failed: dict[int, str] = {}
    for batch in batches.select_related("run").order_by("pk"):
        try:
            batch_expire(batch=batch)
        except Exception as exc:  # noqa: BLE001 - one failure must not stop the switch
            failed[batch.pk] = str(exc)
        else:
            stopped.append(batch.pk)
    event_record(
        action=EventAction.BATCHES_STOPPED,
        run=run,
        data={"reason": reason, "stopped": stopped, "failed": failed},
    )
    return {"stopped": stopped, "failed": failed}
