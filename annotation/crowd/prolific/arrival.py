"""A participant arriving from Prolific. The URL's ids (PROLIFIC_PID, STUDY_ID, SESSION_ID) are
claims: before anything is written the session is looked up at Prolific (GET
/submissions/<SESSION_ID>/) and must be this participant's live submission of this batch's
study. Then the existing claim rule gives them a HIT, tied to that submission."""

from __future__ import annotations

from django.db import transaction

from annotation.crowd.prolific.client import (
    ACTIVE,
    ID_PATTERN,
    RESERVED,
    ProlificClient,
    ProlificError,
)
from annotation.crowd.prolific.studies import study_of
from annotation.errors import ServiceError
from annotation.models import Assignment, Batch, Worker
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.worker_identity import worker_get_or_create

PROVIDER = "prolific"


def arrival_ids_check(
    *, batch: Batch, pid: str, study_id: str, session_id: str, expected: str = ""
) -> None:
    """Refuse malformed ids and a study that is not this batch's (`expected`: its test study)
    (nothing asked, nothing written)."""
    for name, value in (("PROLIFIC_PID", pid), ("STUDY_ID", study_id), ("SESSION_ID", session_id)):
        if not ID_PATTERN.match(value or ""):  # Prolific's ids: 24 hexadecimal characters
            raise ServiceError(f"the link from Prolific has no valid {name}")
    study = expected or batch.provider_hit_type_id
    if not study or study_id != study:
        raise ServiceError("this link does not belong to this batch's Prolific study")


def participant_verify(
    *, batch: Batch, pid: str, session_id: str, client: ProlificClient
) -> Worker:
    """The participant, once Prolific confirms the session is their live submission of the
    batch's study."""
    session_verify(pid=pid, session_id=session_id, study_id=study_of(batch), client=client)
    worker = worker_get_or_create(provider=PROVIDER, external_id=pid)
    if worker.blocked:
        raise ServiceError("you cannot take part in this study")
    return worker


def session_verify(*, pid: str, session_id: str, study_id: str, client: ProlificClient) -> None:
    """Prolific confirms `session_id` is `pid`'s live submission of `study_id`."""
    try:
        submission = client.call("GET", f"submissions/{session_id}/")
    except ProlificError as exc:
        if exc.status == 404:
            raise ServiceError("Prolific does not know this session") from None
        raise
    if (
        str(submission.get("participant", submission.get("participant_id", ""))) != pid
        or str(submission.get("study_id", "")) != study_id
    ):
        raise ServiceError("this session belongs to another participant or study at Prolific")
    if str(submission.get("status", "")) not in (ACTIVE, RESERVED):
        raise ServiceError(
            f"this Prolific session is {str(submission.get('status', '')).lower()}: it cannot "
            "take work any more"
        )


def participant_claim(
    *, batch: Batch, worker: Worker, session_id: str, consent_version: str = ""
) -> Assignment | None:
    """The session's assignment: the one it already holds, else a HIT by the claim rule, tied
    to the submission (one submission, one HIT), made under the consent text version
    `consent_version` they accepted; None when no HIT is left for them."""
    held = Assignment.objects.filter(
        hit__batch=batch, worker=worker, provider_assignment_id=session_id
    ).first()
    if held is not None:
        return held
    with transaction.atomic():
        assignment = assignment_claim_next(
            batch=batch, worker=worker, consent_version=consent_version
        )
        if assignment is None:
            return None
        if assignment.provider_assignment_id not in ("", session_id):
            raise ServiceError("your earlier Prolific session still holds a task of this study")
        Assignment.objects.filter(pk=assignment.pk).update(provider_assignment_id=session_id)
        assignment.provider_assignment_id = session_id
    return assignment
