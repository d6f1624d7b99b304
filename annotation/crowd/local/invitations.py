"""Inviting local workers: links created by staff in bulk, consent recorded, revocation."""

from __future__ import annotations

import csv
import secrets
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.models import EventAction, Invitation, Run
from annotation.selectors.work.invitations import run_consent
from annotation.services.checks import check_name
from annotation.services.events import event_record
from annotation.services.work.consent import consent_record
from annotation.services.work.worker_identity import worker_get_or_create, worker_id_normalise

PROVIDER = "local"


HEADERS = {"email", "emails", "id", "ids", "worker", "worker_id", "workerid", "label", "name"}


def labels_from(text: str) -> list[str]:
    """Emails or ids, one per line or the first column of a CSV; a header row (`email`,
    `worker_id`, ...) is skipped."""
    labels = [row[0].strip() for row in csv.reader(text.splitlines()) if row and row[0].strip()]
    if labels and labels[0].casefold().replace(" ", "_") in HEADERS:
        labels = labels[1:]
    return labels


def invitation_of(*, run: Run, label: str) -> Invitation | None:
    """The invitation of the person `label` names (compared normalised, as workers are)."""
    external_id = worker_id_normalise(label, provider=PROVIDER)
    return Invitation.objects.filter(run=run, worker__external_id=external_id).first()


def invitations_create(*, run: Run, labels: Iterable[str]) -> list[Invitation]:
    """One invitation per person (an email or an id; normalised, so "Alice" and "alice" + a
    zero-width space are one person). Existing invitations are returned unchanged."""
    cleaned = [str(label).strip() for label in labels if str(label).strip()]
    if not cleaned:
        raise ServiceError("no worker to invite: give at least one email or id")
    invitations: list[Invitation] = []
    created = 0
    with transaction.atomic():
        for label in cleaned:
            if len(label) > 100:
                raise ServiceError(
                    f"{label[:40]!r}…: an email or id must be at most 100 characters"
                )
            check_name(label, field="labels", limit=100)
            worker = worker_get_or_create(provider=PROVIDER, external_id=label)
            invitation, made = Invitation.objects.get_or_create(
                run=run,
                worker=worker,
                defaults={"label": label, "token": secrets.token_urlsafe(24)},
            )
            created += made
            if invitation not in invitations:
                invitations.append(invitation)
        event_record(action=EventAction.INVITATIONS_CREATED, run=run, data={"created": created})
    return invitations


def invitation_revoke(*, invitation: Invitation) -> Invitation:
    """The link stops working at once; the worker's submitted work stays."""
    if invitation.revoked_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
        event_record(
            action=EventAction.INVITATION_REVOKED,
            run=invitation.run,
            worker=invitation.worker,
            data={"invitation": invitation.pk},
        )
    return invitation


def invitation_consent(*, invitation: Invitation, version: str) -> Invitation:
    """Record that the worker accepted the consent text of `version` (the current one)."""
    current = run_consent(invitation.run)["version"]
    if version != current:
        raise ServiceError("the information text changed while you read it; please read it again")
    with transaction.atomic():
        # The invitation keeps the version that lets the worker in; the consent table keeps
        # the record every provider's workers share (idempotent: safe on every post).
        consent_record(worker=invitation.worker, run=invitation.run, version=current)
        if invitation.consent_version != current:
            invitation.consent_version = current
            invitation.consented_at = timezone.now()
            invitation.save(update_fields=["consent_version", "consented_at"])
            event_record(
                action=EventAction.INVITATION_CONSENTED,
                run=invitation.run,
                worker=invitation.worker,
                data={"version": current},
            )
    return invitation
