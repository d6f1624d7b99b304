"""This database's identity, carried by every MTurk token and name (see models.Installation)."""

from __future__ import annotations

import hashlib
import secrets

from annotation.models import Installation


def installation_id() -> str:
    """The installation's random id, made on first use (8 hex characters)."""
    row = Installation.objects.order_by("pk").first()
    if row is None:
        row, _ = Installation.objects.get_or_create(pk=1, defaults={"key": secrets.token_hex(4)})
    return row.key


def installation_token(*parts: object) -> str:
    """A provider's request token for `parts`, unique to this installation (a copied database
    gets its own), so a platform that remembers tokens (MTurk) never mixes two installations."""
    text = "|".join(map(str, (installation_id(), *parts)))
    return "crowdvl-" + hashlib.sha256(text.encode()).hexdigest()[:48]
