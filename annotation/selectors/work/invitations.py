"""Who a local worker is: the holder of a valid invitation link, and what they consented to."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from django.db.models import Count

from annotation.models import Consent, Invitation, Run, Worker
from annotation.run_settings import RunTexts, run_settings

DEFAULT_CONSENT = (
    "This is a research study that builds a dataset of images and their descriptions. You "
    "will look at images and captions and answer questions about them. Your answers will be "
    "published as part of the dataset under a pseudonym; your name, email and worker id are "
    "never published. Taking part is voluntary and you may stop at any time. Contact the "
    "researchers who sent you this link with any question."
)


def run_consent(run: Run) -> dict[str, Any]:
    """The information and consent text workers of `run` accept (its setting `consent`, or
    the default), with its version: a hash of the text, so any edit is a new version."""
    text = run_settings(run).consent or DEFAULT_CONSENT
    return {"text": text, "version": _version(text)}


def consent_version(config: Mapping[str, Any]) -> str:
    """The version of a run's consent text, from its stored config (read without its run)."""
    return _version(RunTexts.from_config(config).consent or DEFAULT_CONSENT)


def _version(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def invitation_by_token(token: str) -> Invitation | None:
    """A valid (not revoked) invitation, or None."""
    return (
        Invitation.objects.select_related("run", "worker")
        .filter(token=token, revoked_at__isnull=True)
        .first()
    )


def invited_worker(*, run: Run, worker_id: int, provider: str) -> Worker | None:
    """The worker `worker_id` of `provider` if their invitation to `run` is valid and their
    consent current; one query (every local worker page asks)."""
    invitation = (
        Invitation.objects.select_related("worker")
        .filter(
            run=run,
            worker_id=worker_id,
            worker__provider=provider,
            revoked_at__isnull=True,
            consent_version=run_consent(run)["version"],
        )
        .first()
    )
    return invitation.worker if invitation else None


def consent_summary(run: Run) -> dict[str, Any]:
    """What an export's manifest says about consent: the current text and version, how many
    workers were invited by link, and how many people accepted, per text version and per
    provider (the `Consent` rows every provider's consent page writes)."""
    accepted = Consent.objects.filter(run=run)
    by_version = accepted.values("version").annotate(n=Count("worker", distinct=True)).order_by()
    by_provider = (
        accepted.values("worker__provider").annotate(n=Count("worker", distinct=True)).order_by()
    )
    return {
        **run_consent(run),
        "invited": Invitation.objects.filter(run=run).count(),
        "accepted_by_version": dict(sorted((r["version"], r["n"]) for r in by_version)),
        "accepted_by_provider": dict(sorted((r["worker__provider"], r["n"]) for r in by_provider)),
    }
