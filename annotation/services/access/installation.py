"""Giving a restored or copied database its own identity."""

from __future__ import annotations

import secrets

from django.db import transaction

from annotation.models import EventAction, Installation
from annotation.selectors.installation import installation_id
from annotation.services.events import event_record


def installation_regenerate() -> str:
    """A new random installation id: run it on a restored or copied database, so its MTurk
    tokens and names never collide with the original's. HITs already published keep the ids
    they were made with (their provider ids are stored)."""
    with transaction.atomic():
        old = installation_id()
        new = secrets.token_hex(4)
        Installation.objects.all().delete()
        Installation.objects.create(pk=1, key=new)
        event_record(action=EventAction.INSTALLATION_REGENERATED, data={"old": old, "new": new})
    return new
