"""A panel participant's browser session: the participant id their study link named (a claim
until the panel's list confirms it), their worker once they started, and the consent they
accepted, kept here until work starts (issue 47: consent clicks under made-up ids write no
row)."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest

from annotation.crowd.panel import options
from annotation.crowd.panel.selectors import consented, panel_worker
from annotation.models import Batch, Worker
from annotation.selectors.work.invitations import run_consent

# {"batch": id, "participant": the link's id, "worker": pk or None, "consent": [version, when]
# or None}: the consent waits here until the participant starts work (`participant_start`).
SESSION = "crowdvl_panel"


def session_is_bound(request: HttpRequest, batch: Batch, participant: str) -> bool:
    """Whether the session is bound to `participant` of `batch` already (a reload)."""
    old = request.session.get(SESSION)
    return isinstance(old, dict) and (old.get("batch"), old.get("participant")) == (
        batch.pk,
        participant,
    )


def session_bind(
    request: HttpRequest,
    batch: Batch,
    participant: str,
    worker: Worker | None,
    *,
    consent: list[str] | None = None,
) -> None:
    """Bind the session to the participant the study link names (a new session for a new
    person or batch, as an invitation link does for local workers); the consent they gave in
    this session is kept unless another is given."""
    old = request.session.get(SESSION)
    if not session_is_bound(request, batch, participant):
        request.session.cycle_key()
    elif consent is None and isinstance(old, dict):
        consent = old.get("consent")
    request.session[SESSION] = {
        "batch": batch.pk,
        "participant": participant,
        "worker": worker.pk if worker else None,
        "consent": consent,
    }


def session_consent(request: HttpRequest, batch: Batch) -> tuple[str, datetime] | None:
    """The current consent text's version and when they accepted it in this session, if so."""
    data = request.session.get(SESSION)
    given = data.get("consent") if isinstance(data, dict) else None
    if not isinstance(given, list) or len(given) != 2:
        return None
    if given[0] != run_consent(batch.run)["version"]:
        return None
    return given[0], datetime.fromisoformat(given[1])


def consent_accepted(request: HttpRequest, batch: Batch, worker: Worker | None) -> bool:
    """Whether the participant accepted the current text: recorded, or in this session."""
    if worker is not None and consented(run=batch.run, worker=worker):
        return True
    return session_consent(request, batch) is not None


def session_bound(request: HttpRequest, batch: Batch) -> tuple[str, Worker | None] | None:
    """The participant id this session is bound to for `batch`, and their worker if they
    consented once; None when the session came by no study link of the batch."""
    data = request.session.get(SESSION)
    if not isinstance(data, dict) or data.get("batch") != batch.pk:
        return None
    participant = data.get("participant")
    if not isinstance(participant, str) or options.participant_id_check(participant) is None:
        return None
    return participant, panel_worker(batch=batch, participant=participant)


def session_worker(request: HttpRequest) -> int | None:
    """The worker the session's participant consented as, if any."""
    data = request.session.get(SESSION)
    worker_id = data.get("worker") if isinstance(data, dict) else None
    return worker_id if isinstance(worker_id, int) else None
