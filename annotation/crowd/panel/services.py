"""The panel's writes: a batch's settings, a participant's start (with their consent), the end
of their work."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.crowd.panel import options
from annotation.crowd.panel.models import Finish, Participant
from annotation.errors import ServiceError
from annotation.models import Assignment, AssignmentState, Batch, EventAction, Worker
from annotation.selectors.work.invitations import run_consent
from annotation.services.events import event_record
from annotation.services.work.consent import consent_record
from annotation.services.work.worker_identity import worker_get_or_create


def panel_batch_check(batch: Batch) -> None:
    if batch.provider != options.PROVIDER:
        raise ServiceError(f"batch {batch.pk} is a {batch.provider} batch, not a panel batch")


def panel_settings_set(*, batch: Batch, changes: dict[str, Any]) -> dict[str, Any]:
    """Change the batch's panel settings (the others stay); the checked settings. The panel's
    name is fixed once anyone claimed work in the batch: it is part of every participant's
    worker id."""
    panel_batch_check(batch)
    with transaction.atomic():
        batch = Batch.objects.select_for_update().get(pk=batch.pk)
        current = options.settings_of(batch)
        merged = options.settings_merge(current, changes)
        if (
            merged["name"] != current["name"]
            and Assignment.objects.filter(hit__batch=batch).exists()
        ):
            raise ServiceError(
                "the panel's name cannot change once participants worked on the batch: their "
                "ids would then name other people"
            )
        if merged != current:
            Batch.objects.filter(pk=batch.pk).update(options={**batch.options, options.KEY: merged})
            event_record(
                action=EventAction.PANEL_SETTINGS_CHANGED,
                run=batch.run,
                batch=batch,
                data={"changed": sorted(k for k in merged if merged[k] != current.get(k))},
            )
    return merged


def consent_check(*, batch: Batch, version: str) -> str:
    """The version of the run's information and consent text `version` names, if it is the
    current one (the participant read what they accepted); ServiceError otherwise. Nothing is
    written: the acceptance waits in the participant's session until they start work
    (`participant_start`), so consent clicks under made-up ids write no row (issue 47)."""
    current = run_consent(batch.run)["version"]
    if version != current:
        raise ServiceError("the information text changed while you read it; please read it again")
    return current


def participant_start(
    *, batch: Batch, participant: str, version: str, consented_at: datetime | None = None
) -> Worker:
    """Record that `participant` (the id their study link carried) accepted the run's
    information and consent text of `version` (the current one) at `consented_at`, as they
    start work: their worker, participant row and the core's consent record."""
    current = consent_check(batch=batch, version=version)
    consented_at = consented_at or timezone.now()
    settings = options.settings_of(batch)
    worker = worker_get_or_create(
        provider=options.PROVIDER, external_id=options.external_id(settings, participant)
    )
    with transaction.atomic():
        row, made = Participant.objects.select_for_update().get_or_create(
            run=batch.run,
            worker=worker,
            defaults={"consent_version": current, "consented_at": consented_at},
        )
        # The participant row says which version lets them in; the core's consent table
        # keeps the record every provider's workers share.
        consent_record(worker=worker, run=batch.run, version=current)
        if made or row.consent_version != current:
            if not made:
                row.consent_version, row.consented_at = current, consented_at
                row.save(update_fields=["consent_version", "consented_at"])
            event_record(
                action=EventAction.PANEL_CONSENTED,
                run=batch.run,
                batch=batch,
                worker=worker,
                data={"version": current},
            )
    return worker


def participant_finish(*, batch: Batch, worker: Worker, outcome: str, stopped: bool) -> None:
    """The end of a participant's work in `batch` (`outcome`, one of `options.OUTCOMES` or
    `options.RETURNED`): a participant who stopped lets their open task go at once (its
    slot is free for someone else); each outcome is written to the event log once."""
    with transaction.atomic():
        if stopped:
            for assignment in Assignment.objects.select_for_update().filter(
                hit__batch=batch, worker=worker, state=AssignmentState.ACCEPTED
            ):
                Assignment.objects.filter(pk=assignment.pk).update(state=AssignmentState.ABANDONED)
                event_record(
                    action=EventAction.ASSIGNMENT_ABANDONED,
                    run=batch.run,
                    batch=batch,
                    assignment=assignment,
                    worker=worker,
                    data={"source": "panel", "reason": "the participant finished"},
                )
        _, new = Finish.objects.get_or_create(
            batch=batch, worker=worker, outcome=outcome, defaults={"stopped": stopped}
        )
        if new:
            event_record(
                action=EventAction.PANEL_FINISHED,
                run=batch.run,
                batch=batch,
                worker=worker,
                data={"outcome": outcome, "stopped": stopped},
            )
