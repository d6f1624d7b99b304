"""Publishing a batch at Prolific as a job (the checks first, then the study), and the
periodic synchronisation of every batch whose work is not final."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from annotation.crowd.prolific.client import ProlificClient
from annotation.crowd.prolific.groups import pool_grant_pending, study_group_filters
from annotation.crowd.prolific.spend import prolific_cost_check
from annotation.crowd.prolific.studies import (
    filters,
    hits_mark_offered,
    places,
    study_create_once,
    study_places_raise,
    study_publish,
    study_url,
)
from annotation.crowd.prolific.sync import (
    SyncReport,
    prolific_batches_to_sync,
    prolific_sync_batch,
)
from annotation.errors import ServiceError
from annotation.models import Batch, BatchStatus, EventAction, Job
from annotation.selectors.money.pay import pay_estimate
from annotation.services.events import event_record
from annotation.services.jobs.jobs import Progress, job_create

if TYPE_CHECKING:
    from annotation.crowd.prolific.provider import ProlificProvider

PROVIDER = "prolific"


def prolific_publish_start(*, batch: Batch, provider: ProlificProvider) -> Job:
    """Check everything Prolific or the project's limits would refuse, then enqueue the study."""
    from annotation.crowd.prolific import tasks

    if batch.provider != PROVIDER:
        raise ServiceError(f"batch {batch.pk} uses the {batch.provider!r} provider, not prolific")
    if batch.status != BatchStatus.DRAFT:
        raise ServiceError(f"batch {batch.pk} is {batch.status}, not draft")
    study_url(batch)  # an HTTPS address Prolific can send participants to
    estimate = prolific_cost_check(batch=batch, client=provider.client)
    filters(batch, client=provider.client)  # every requirement is in Prolific's filter list
    with transaction.atomic():
        job = job_create(
            name="prolific.publish",
            run=batch.run,
            params={
                "batch": batch.pk,
                "estimate": estimate.describe(),
                "pay": pay_estimate(batch=batch).describe(),
                "total": str(estimate.total),
            },
        )
        event_record(
            action=EventAction.PROLIFIC_PUBLISH_REQUESTED,
            run=batch.run,
            batch=batch,
            data=job.params,
        )
        transaction.on_commit(lambda: tasks.prolific_publish_task.delay(job.pk))
    return job


def prolific_publish_study(
    *, batch: Batch, client: ProlificClient, progress: Progress | None = None
) -> None:
    """The batch's study created (once) and published; HITs added later (re-offers) raise
    its places. Safe to run again."""
    study_url(batch)
    if not batch.provider_hit_type_id:
        prolific_cost_check(batch=batch, client=client)
        filters(batch, client=client)  # a requirement Prolific lacks: refused before any group
        extra = study_group_filters(batch=batch, client=client)
        study_create_once(batch=batch, client=client, extra_filters=extra)
    study = client.call("GET", f"studies/{batch.provider_hit_type_id}/")
    if study.get("status") != "UNPUBLISHED":  # live: HITs added since raise its places
        study_places_raise(batch=batch, client=client)
        hits_mark_offered(batch=batch)
        return
    study_publish(batch=batch, client=client, progress=progress)
    event_record(
        action=EventAction.PROLIFIC_STUDY_PUBLISHED,
        run=batch.run,
        batch=batch,
        data={"study": batch.provider_hit_type_id, "places": places(batch)},
    )


def prolific_sync_one(*, batch: Batch, client: ProlificClient) -> SyncReport:
    """A batch's statuses from Prolific, then its participants with counted work put in their
    stage's pool group: what the periodic task, the batch's button and the command all do."""
    report = prolific_sync_batch(batch=batch, client=client)
    pool_grant_pending(batch=batch, client=client)
    return report


def prolific_sync_open(*, provider: ProlificProvider) -> None:
    """Synchronise every Prolific batch whose work is not final; a batch that fails records
    its error (the dashboard shows it) and the others go on."""
    for batch in prolific_batches_to_sync():
        try:
            prolific_sync_one(batch=batch, client=provider.client)
        except Exception as exc:  # noqa: BLE001 - one bad batch must not stop the rest
            message = f"{type(exc).__name__}: {exc}"
            Batch.objects.filter(pk=batch.pk).update(sync_error=message[:2000])
            event_record(
                action=EventAction.PROLIFIC_SYNC_FAILED,
                run=batch.run,
                batch=batch,
                data={"error": message},
            )
            continue
        if batch.sync_error:
            Batch.objects.filter(pk=batch.pk).update(sync_error="")
