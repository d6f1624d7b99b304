"""Money and HITs, local records against MTurk's: what each batch committed and spent (rewards,
fees, bonuses) as recorded here and as recomputed from MTurk's own lists, HITs MTurk holds
that this database does not know, and HITs recorded here that MTurk no longer lists (or no
longer knows at all: their assignments and bonuses cannot be compared).

Reads only: nothing is changed on either side. Spent money is recomputed by MTurk's fee rule
(20% of a reward, 40% for HITs with 10 or more assignments, 20% of a bonus; $0.01 minimum).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings

from annotation.crowd.mturk.client import ENV_TAGS, MTurkError, batch_environment, hit_gone
from annotation.crowd.mturk.fees import BONUS_FEE_RATE, mturk_fee, mturk_fee_rate
from annotation.crowd.mturk.provider import MTurkProvider
from annotation.crowd.mturk.spend import mturk_provider
from annotation.models import Assignment, AssignmentState, Batch, BatchStatus, Bonus, Hit
from annotation.selectors.installation import installation_id

ZERO = Decimal("0.00")
PROVIDER = "mturk"


@dataclass
class Money:
    approved: int = 0
    rewards: Decimal = ZERO
    fees: Decimal = ZERO
    bonuses: Decimal = ZERO
    bonus_fees: Decimal = ZERO

    @property
    def total(self) -> Decimal:
        return self.rewards + self.fees + self.bonuses + self.bonus_fees


@dataclass
class BatchMoney:
    batch: Batch
    committed: Decimal
    local: Money
    remote: Money
    submitted_remote: int = 0

    @property
    def matches(self) -> bool:
        return self.local == self.remote


@dataclass
class Reconciliation:
    environment: str
    batches: list[BatchMoney] = field(default_factory=list)
    unknown_remote: list[dict[str, Any]] = field(default_factory=list)  # ours, not recorded
    other_remote: int = 0  # HITs of the account made by something else
    missing_remote: list[Hit] = field(default_factory=list)  # recorded, not listed by MTurk
    gone: list[Hit] = field(default_factory=list)  # recorded; MTurk refused their lists

    @property
    def mismatches(self) -> list[BatchMoney]:
        return [b for b in self.batches if not b.matches]


def _paid(batch: Batch, approved: int, bonuses: list[Decimal]) -> Money:
    rate = mturk_fee_rate(batch.assignments_per_hit)
    fee = mturk_fee(batch.reward, rate)
    return Money(
        approved=approved,
        rewards=batch.reward * approved,
        fees=fee * approved,
        bonuses=sum(bonuses, ZERO),
        bonus_fees=sum((mturk_fee(b, BONUS_FEE_RATE) for b in bonuses), ZERO),
    )


def _committed(batch: Batch) -> Decimal:
    """Every slot of every HIT paid at the reward plus its fee."""
    slots = sum(hit.capacity for hit in batch.hits.exclude(provider_hit_id=""))
    return (batch.reward + mturk_fee(batch.reward, mturk_fee_rate(batch.assignments_per_hit))) * (
        slots
    )


def mturk_reconcile(
    *, environment: str | None = None, provider: MTurkProvider | None = None
) -> Reconciliation:
    """Compare every published MTurk batch of `environment` (default: the configured one)."""
    provider = provider or mturk_provider()
    environment = environment or settings.CROWDVL_MTURK_ENV
    report = Reconciliation(environment=environment)
    batches = [
        b
        for b in Batch.objects.filter(provider=PROVIDER)
        .exclude(status=BatchStatus.DRAFT)
        .select_related("run")
        .order_by("pk")
        if batch_environment(b) == environment
    ]
    for batch in batches:
        hits = list(batch.hits.exclude(provider_hit_id="").order_by("position"))
        local_approved = Assignment.objects.filter(
            hit__batch=batch, state=AssignmentState.APPROVED, confirmed=True
        ).count()
        local_bonuses = list(
            Bonus.objects.filter(assignment__hit__batch=batch, sent_at__isnull=False)
            .values_list("amount", flat=True)
            .order_by("pk")
        )
        remote_approved = remote_submitted = 0
        remote_bonuses: list[Decimal] = []
        for hit in hits:
            try:
                items = list(provider.list_assignments(hit=hit))
                payments = list(provider.bonus_payments(hit=hit))
            except MTurkError as exc:
                if not hit_gone(exc):
                    raise
                # Its money can no longer be compared; the rest of the report still can.
                report.gone.append(hit)
                continue
            for item in items:
                status = item.get("AssignmentStatus")
                remote_approved += status == "Approved"
                remote_submitted += status == "Submitted"
            remote_bonuses += [Decimal(str(p["BonusAmount"])) for p in payments]
        report.batches.append(
            BatchMoney(
                batch=batch,
                committed=_committed(batch),
                local=_paid(batch, local_approved, local_bonuses),
                remote=_paid(batch, remote_approved, remote_bonuses),
                submitted_remote=remote_submitted,
            )
        )
    prefix = f"crowdvl-{installation_id()}-{ENV_TAGS.get(environment, environment)}-hit-"
    recorded = dict(
        Hit.objects.filter(batch__provider=PROVIDER)
        .exclude(provider_hit_id="")
        .values_list("provider_hit_id", "pk")
    )
    listed: set[str] = set()
    for item in provider.hits_listed(environment=environment):
        hit_id = str(item["HITId"])
        listed.add(hit_id)
        if hit_id in recorded:
            continue
        if str(item.get("RequesterAnnotation", "")).startswith(prefix):
            report.unknown_remote.append(
                {
                    "hit_id": hit_id,
                    "annotation": item.get("RequesterAnnotation"),
                    "status": item.get("HITStatus"),
                    "max_assignments": item.get("MaxAssignments"),
                }
            )
        else:
            report.other_remote += 1
    report.missing_remote = [
        hit
        for batch in batches
        for hit in batch.hits.exclude(provider_hit_id="").order_by("position")
        if hit.provider_hit_id not in listed
    ]
    return report
