"""Bonuses through Prolific's two steps: set up (POST /submissions/bonus-payments/), then pay
(POST /bulk-bonus-payments/<id>/pay/), which is NOT idempotent: paying again pays again. Each
step is recorded before it is sent; a retry reuses the set-up, and once a pay request was
recorded it is never sent again: the retry looks the bonus up in the submission's
`bonus_payments` and refuses (for a person to check) rather than risk paying twice."""

from __future__ import annotations

from decimal import Decimal

from annotation.crowd.prolific.client import ProlificClient
from annotation.crowd.prolific.fees import minor_units
from annotation.crowd.prolific.studies import study_of
from annotation.errors import ServiceError
from annotation.models import Assignment, Event
from annotation.services.events import event_record


def _recorded(action: str, token: str) -> Event | None:
    return Event.objects.filter(action=action, data__token=token).order_by("pk").first()


def _seen_at_prolific(*, assignment: Assignment, amount: Decimal, client: ProlificClient) -> bool:
    """Whether the submission shows as many bonuses of `amount` as were requested here."""
    detail = client.call("GET", f"submissions/{assignment.provider_assignment_id}/")
    shown = [int(a) for a in detail.get("bonus_payments", []) or []]
    requested = Event.objects.filter(
        action="prolific.bonus_pay_requested",
        assignment=assignment,
        data__amount=str(amount),
    ).count()
    return shown.count(minor_units(amount)) >= max(1, requested)


def prolific_bonus_send(
    *, assignment: Assignment, amount: Decimal, reason: str, token: str, client: ProlificClient
) -> None:
    batch = assignment.hit.batch
    study = study_of(batch)
    participant = assignment.worker.external_id
    created = _recorded("prolific.bonus_created", token)
    if created is None:
        body = client.call(
            "POST",
            "submissions/bonus-payments/",
            json={"study_id": study, "csv_bonuses": f"{participant},{Decimal(amount):.2f}"},
        )
        created = event_record(
            action="prolific.bonus_created",
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={
                "token": token,
                "bulk_bonus": str(body["id"]),
                "total_amount": body.get("total_amount"),
                "reason": reason,
            },
        )
    if _recorded("prolific.bonus_pay_requested", token) is not None:
        if _seen_at_prolific(assignment=assignment, amount=Decimal(amount), client=client):
            return
        raise ServiceError(
            f"the payment of this bonus was requested from Prolific before and is not shown "
            f"on submission {assignment.provider_assignment_id} yet: Prolific pays within "
            "minutes, and asking again would pay twice; check the study's bonuses at Prolific"
        )
    event_record(
        action="prolific.bonus_pay_requested",
        run=batch.run,
        batch=batch,
        assignment=assignment,
        worker=assignment.worker,
        data={"token": token, "bulk_bonus": created.data["bulk_bonus"], "amount": str(amount)},
    )
    client.call("POST", f"bulk-bonus-payments/{created.data['bulk_bonus']}/pay/", retry=False)
