"""Local records against Prolific's, read only: for each study, every submission Prolific lists
against the assignment tied to it here (statuses that disagree; submissions completed at
Prolific with no work here, e.g. a completion code typed by hand: reject them as NO_DATA),
local work Prolific does not list, and the money Prolific reports spent on rewards and bonuses
(GET /studies/<id>/cost/) against what was approved and sent here. Nothing is changed."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

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
    ProlificError,
    status_normalise,
)
from annotation.models import Assignment, AssignmentState, Batch, BatchStatus, Bonus

PROVIDER = "prolific"
ZERO = Decimal("0.00")
# The statuses at Prolific that agree with each local state.
# Keyed by the stored state (a plain string when read from a row).
AGREES: dict[str, tuple[str, ...]] = {
    AssignmentState.ACCEPTED: (RESERVED, ACTIVE),
    AssignmentState.SUBMITTED: (ACTIVE, AWAITING_REVIEW),  # ACTIVE: not completed there yet
    AssignmentState.APPROVED: (APPROVED, PARTIALLY_APPROVED),
    AssignmentState.REJECTED: (REJECTED,),
    AssignmentState.ABANDONED: (RETURNED, TIMED_OUT, SCREENED_OUT),
}


@dataclass
class StudyRow:
    batch: Batch
    study: str
    submissions: int = 0
    disagree: list[dict[str, str]] = field(default_factory=list)  # submission, here, there
    no_work_here: list[str] = field(default_factory=list)  # completed there, nothing here
    not_listed: list[int] = field(default_factory=list)  # assignments Prolific does not list
    rewards_here: Decimal = ZERO
    rewards_there: Decimal | None = None
    bonuses_here: Decimal = ZERO
    bonuses_there: Decimal | None = None

    @property
    def money_unread(self) -> bool:
        """Prolific's cost could not be read: the money is not known to agree."""
        return self.rewards_there is None or self.bonuses_there is None

    @property
    def matches(self) -> bool:
        money = self.rewards_there == self.rewards_here and self.bonuses_there == self.bonuses_here
        return money and not (self.disagree or self.no_work_here or self.not_listed)


@dataclass
class Reconciliation:
    rows: list[StudyRow] = field(default_factory=list)
    gone: list[Batch] = field(default_factory=list)  # studies Prolific no longer knows

    @property
    def mismatches(self) -> list[StudyRow]:
        return [r for r in self.rows if not r.matches]


def _amount(node: Any) -> Decimal | None:
    """A cost leaf ({amount: minor units, currency}) in major units, or None when it is not one
    (then the row does not match: an unreadable cost is not agreement)."""
    if isinstance(node, dict) and isinstance(node.get("amount"), int):
        return Decimal(node["amount"]) / 100
    return None


def _study_row(batch: Batch, client: ProlificClient) -> StudyRow:
    study = batch.provider_hit_type_id
    row = StudyRow(batch=batch, study=study)
    local = {
        a.provider_assignment_id: a
        for a in Assignment.objects.filter(hit__batch=batch, worker__provider=PROVIDER).exclude(
            provider_assignment_id=""
        )
    }
    listed: set[str] = set()
    for item in client.pages("submissions/", params={"study": study}):
        row.submissions += 1
        sid, status = str(item.get("id", "")), status_normalise(str(item.get("status", "")))
        listed.add(sid)
        mine = local.get(sid)
        if mine is None:
            if status in (AWAITING_REVIEW, APPROVED):
                row.no_work_here.append(sid)
            continue
        if status not in AGREES.get(mine.state, ()):
            row.disagree.append({"submission": sid, "here": mine.state, "there": status})
    row.not_listed = sorted(a.pk for sid, a in local.items() if sid not in listed)
    approved = sum(1 for a in local.values() if a.state == AssignmentState.APPROVED)
    row.rewards_here = batch.reward * approved
    bonuses = Bonus.objects.filter(assignment__hit__batch=batch, sent_at__isnull=False)
    row.bonuses_here = sum((b.amount for b in bonuses), ZERO)
    cost = client.call("GET", f"studies/{study}/cost/") or {}
    row.rewards_there = _amount((cost.get("rewards") or {}).get("rewards"))
    row.bonuses_there = _amount((cost.get("bonuses") or {}).get("rewards"))
    return row


def prolific_reconcile(*, client: ProlificClient) -> Reconciliation:
    report = Reconciliation()
    batches = (
        Batch.objects.filter(provider=PROVIDER)
        .exclude(provider_hit_type_id="")
        .exclude(status=BatchStatus.DRAFT)
        .select_related("run")
        .order_by("pk")
    )
    for batch in batches:
        try:
            report.rows.append(_study_row(batch, client))
        except ProlificError as exc:
            if exc.status != 404:
                raise
            report.gone.append(batch)  # the rest of the report still comes
    return report
