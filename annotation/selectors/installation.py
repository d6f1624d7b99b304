"""This database's identity, carried by every MTurk token and name (see models.Installation)."""

from __future__ import annotations

import secrets

from annotation.models import Installation


def installation_id() -> str:
    """The installation's random id, made on first use (8 hex characters)."""
    row = Installation.objects.order_by("pk").first()
    if row is None:
        row, _ = Installation.objects.get_or_create(pk=1, defaults={"key": secrets.token_hex(4)})
    return row.key
