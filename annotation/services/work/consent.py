"""Recording consent, for every provider: each provider's consent page calls `consent_record`
once the worker (whose identity the provider confirmed) accepted the run's text, so exports and
datasheets count who agreed from one table whichever way people came in."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation.models import Consent, EventAction, Run, Worker
from annotation.services.events import event_record


def consent_record(*, worker: Worker, run: Run, version: str) -> Consent:
    """`worker` accepted version `version` of `run`'s information and consent text (the caller
    checked it is the current one). Idempotent per worker, run and version: accepting the same
    text again keeps the first row and its time. Claims and submits never read these rows, so
    recording consent changes no rule about work in progress."""
    with transaction.atomic():
        row, made = Consent.objects.get_or_create(
            run=run, worker=worker, version=version, defaults={"accepted_at": timezone.now()}
        )
        if made:
            event_record(
                action=EventAction.CONSENT_RECORDED,
                run=run,
                worker=worker,
                data={"version": version, "provider": worker.provider},
            )
    return row
