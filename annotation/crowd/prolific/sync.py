"""Submission statuses from Prolific, by polling (the periodic task, the batch's sync button)
and by webhook: each moves the assignment tied to that submission, once. RETURNED, TIMED-OUT
and SCREENED OUT free the participant's slot and items at once (the assignment is abandoned:
its work never counts, and a late submission after that is refused by the task page);
REJECTED and APPROVED decided at Prolific are recorded; a status this code does not know is
recorded as an event, never dropped. Seeing the same status again changes nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from annotation.crowd.prolific.client import (
    ACTIVE,
    APPROVED,
    AWAITING_REVIEW,
    PARTIALLY_APPROVED,
    REJECTED,
    RESERVED,
    RETURNED,
    SCREENED_OUT,
    TIMED_OUT,
    ProlificClient,
    status_normalise,
)
from annotation.crowd.prolific.models import RefusedSubmission, UnknownStatus
from annotation.errors import ServiceError
from annotation.models import Assignment, AssignmentState, Batch, BatchStatus, EventAction
from annotation.services.events import event_record
from annotation.services.work.confirm import assignment_confirm
from annotation.services.work.decisions import assignment_mark
from annotation.services.work.recount import hit_recount

PROVIDER = "prolific"
ENDED = (RETURNED, TIMED_OUT, SCREENED_OUT)
AUTO_APPROVAL = timedelta(days=21)
LIVE = (RESERVED, ACTIVE)


@dataclass
class SyncReport:
    submissions: int = 0
    changed: int = 0
    unknown: list[str] = field(default_factory=list)  # statuses recorded, not understood


def status_apply(*, assignment: Assignment, status: str, source: str) -> bool:
    """Move `assignment` to what Prolific says of its submission; whether anything changed."""
    status = status_normalise(status)
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().select_related("hit__batch__run", "worker")
        assignment = locked.get(pk=assignment.pk)
        state = assignment.state
        if status in ENDED and state in (AssignmentState.ACCEPTED, AssignmentState.SUBMITTED):
            assignment_mark(
                assignment=assignment,
                state=AssignmentState.ABANDONED,
                source=source,
                prolific_status=status,
            )
            hit_recount(hit=assignment.hit)  # the slot and its items are free again
            return True
        if status == REJECTED and state == AssignmentState.SUBMITTED:
            assignment_mark(assignment=assignment, state=AssignmentState.REJECTED, source=source)
            return True
        if status == AWAITING_REVIEW and assignment.auto_approve_at is None:
            # Prolific approves on its own about 21 days after the submission (its help
            # centre; the API does not say): the review queue sorts and warns by it.
            Assignment.objects.filter(pk=assignment.pk).update(
                auto_approve_at=(assignment.submitted_at or timezone.now()) + AUTO_APPROVAL
            )
    if state != AssignmentState.SUBMITTED:
        return False
    changed = False
    if status in (AWAITING_REVIEW, APPROVED, PARTIALLY_APPROVED) and not assignment.confirmed:
        # The participant completed at Prolific: their work counts from now on.
        try:
            assignment_confirm(assignment=assignment, source=source)
        except ServiceError as exc:
            _refused_once(assignment=assignment, error=str(exc))
            return False
        changed = True
    if status in (APPROVED, PARTIALLY_APPROVED):
        assignment.refresh_from_db()
        assignment_mark(assignment=assignment, state=AssignmentState.APPROVED, source=source)
        changed = True
    return changed


def _refused_once(*, assignment: Assignment, error: str) -> None:
    """Work Prolific completed that cannot count here (the HIT is full, the participant had
    these items before): recorded once, for the researcher to reject at Prolific."""
    batch = assignment.hit.batch
    _, new = RefusedSubmission.objects.get_or_create(
        assignment=assignment, defaults={"error": error}
    )
    if new:
        event_record(
            action=EventAction.PROLIFIC_WORK_REFUSED,
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"error": error},
        )


def status_unknown(*, batch: Batch, submission_id: str, status: str, source: str) -> None:
    """Keep a status this code does not know (once per submission and status)."""
    _, new = UnknownStatus.objects.get_or_create(
        batch=batch, submission_id=submission_id, status=status, defaults={"source": source}
    )
    if new:
        event_record(
            action=EventAction.PROLIFIC_STATUS_UNKNOWN,
            run=batch.run,
            batch=batch,
            data={"submission": submission_id, "status": status, "source": source},
        )


KNOWN = (*LIVE, AWAITING_REVIEW, APPROVED, PARTIALLY_APPROVED, REJECTED, *ENDED)


def submission_seen(
    *, batch: Batch, submission_id: str, participant_id: str, status: str, source: str
) -> bool:
    """Apply one submission's status to the assignment tied to it (this batch, this
    participant, this session); whether anything changed."""
    status = status_normalise(status)
    if status not in KNOWN:
        status_unknown(batch=batch, submission_id=submission_id, status=status, source=source)
        return False
    assignment = Assignment.objects.filter(
        hit__batch=batch,
        provider_assignment_id=submission_id,
        worker__provider=PROVIDER,
        worker__external_id=participant_id,
    ).first()
    if assignment is None:  # a participant who never reached a HIT here
        return False
    return status_apply(assignment=assignment, status=status, source=source)


def prolific_sync_batch(*, batch: Batch, client: ProlificClient) -> SyncReport:
    """Every submission Prolific lists for the batch's study (paged)."""
    report = SyncReport()
    if not batch.provider_hit_type_id:
        return report
    for item in client.pages("submissions/", params={"study": batch.provider_hit_type_id}):
        report.submissions += 1
        status = status_normalise(str(item.get("status", "")))
        if status not in KNOWN:
            report.unknown.append(status)
        changed = submission_seen(
            batch=batch,
            submission_id=str(item.get("id", "")),
            participant_id=str(item.get("participant_id", item.get("participant", ""))),
            status=status,
            source="prolific",
        )
        report.changed += changed
    event_record(
        action=EventAction.PROLIFIC_SYNCED,
        run=batch.run,
        batch=batch,
        data={
            "submissions": report.submissions,
            "changed": report.changed,
            "unknown": report.unknown,
        },
    )
    return report


def prolific_batches_to_sync() -> list[Batch]:
    """Batches with a study whose work is not final: published ones, and ended ones while an
    assignment is still open or waiting for review, or within a day of their end."""
    now = timezone.now()
    found = []
    batches = Batch.objects.filter(provider=PROVIDER).exclude(provider_hit_type_id="")
    for batch in batches.exclude(status=BatchStatus.DRAFT).order_by("pk"):
        unsettled = Assignment.objects.filter(
            hit__batch=batch, state__in=(AssignmentState.ACCEPTED, AssignmentState.SUBMITTED)
        ).exists()
        recent = (
            batch.published_at is None
            or batch.published_at + timedelta(seconds=batch.lifetime_seconds + 24 * 3600) >= now
        )
        if batch.status == BatchStatus.PUBLISHED or unsettled or recent:
            found.append(batch)
    return found
