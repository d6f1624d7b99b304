"""Worker ids as exports show them: a keyed hash, so a published dataset names no worker.

The key is the installation's SECRET_KEY (random per installation, see config/settings.py):
the same worker gets the same pseudonym in every export of this installation, and no one
without the key can recompute it from an MTurk worker id.
"""

from __future__ import annotations

from django.utils.crypto import salted_hmac


def worker_pseudonym(*, provider: str, external_id: str) -> str:
    digest = salted_hmac(
        "crowdvl.export.worker", f"{provider}:{external_id}", algorithm="sha256"
    ).hexdigest()
    return "w-" + digest[:24]
