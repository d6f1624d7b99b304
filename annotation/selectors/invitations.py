"""Who a local worker is: the holder of a valid invitation link, and what they consented to."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db.models import Count

from annotation.models import Invitation, Run, Worker

DEFAULT_CONSENT = (
    "This is a research study that builds a dataset of images and their descriptions. You "
    "will look at images and captions and answer questions about them. Your answers will be "
    "published as part of the dataset under a pseudonym; your name, email and worker id are "
    "never published. Taking part is voluntary and you may stop at any time. Contact the "
    "researchers who sent you this link with any question."
)


def run_consent(run: Run) -> dict[str, Any]:
    """The information and consent text workers of `run` accept (`config.consent`, or the
    default), with its version: a hash of the text, so any edit is a new version."""
    text = str(run.config.get("consent") or DEFAULT_CONSENT)
    return {"text": text, "version": hashlib.sha256(text.encode()).hexdigest()[:12]}


def invitation_by_token(token: str) -> Invitation | None:
    """A valid (not revoked) invitation, or None."""
    return (
        Invitation.objects.select_related("run", "worker")
        .filter(token=token, revoked_at__isnull=True)
        .first()
    )


def invitation_for(*, run: Run, worker: Worker) -> Invitation | None:
    """`worker`'s valid invitation to `run` whose consent is current, or None."""
    invitation = Invitation.objects.filter(run=run, worker=worker, revoked_at__isnull=True).first()
    if invitation is None or invitation.consent_version != run_consent(run)["version"]:
        return None
    return invitation


def consent_record(run: Run) -> dict[str, Any]:
    """What an export's manifest says about consent: the current text and version, and how
    many invited local workers accepted each version."""
    accepted = (
        Invitation.objects.filter(run=run)
        .exclude(consent_version="")
        .values("consent_version")
        .annotate(n=Count("pk"))
        .order_by("consent_version")
    )
    return {
        **run_consent(run),
        "invited": Invitation.objects.filter(run=run).count(),
        "accepted_by_version": {row["consent_version"]: row["n"] for row in accepted},
    }
