"""Bonuses through Prolific's two steps: set up (POST /submissions/bonus-payments/), then pay
(POST /bulk-bonus-payments/<id>/pay/), which is NOT idempotent: paying again pays again. Each
step is a `RemoteCall` recorded before it is sent, keyed by the bonus's token. A set-up costs
nothing until it is paid, and Prolific documents no way to list set-ups, so a set-up whose
answer was lost is made again (the lost one is never paid). A payment is sent once: after a
lost answer, or on any later attempt, it is looked up in the submission's `bonus_payments`,
and where it is not shown the attempt stops for a person rather than risk paying twice."""

from __future__ import annotations

from decimal import Decimal

from annotation.crowd.prolific.client import ProlificClient
from annotation.crowd.prolific.fees import minor_units
from annotation.crowd.prolific.studies import study_of
from annotation.models import Assignment, EventAction, RemoteCall
from annotation.services.events import event_record
from annotation.services.jobs.remote_calls import NO_OBJECT, remote_call_once

PROVIDER = "prolific"


def _seen_at_prolific(*, assignment: Assignment, amount: Decimal, client: ProlificClient) -> bool:
    """Whether the submission shows as many bonuses of `amount` as were sent from here."""
    detail = client.call("GET", f"submissions/{assignment.provider_assignment_id}/")
    shown = [int(a) for a in detail.get("bonus_payments", []) or []]
    sent = RemoteCall.objects.filter(
        provider=PROVIDER,
        operation="bonus.pay",
        data__assignment=assignment.pk,
        data__amount=str(amount),
        attempts__gt=0,
    ).count()
    return shown.count(minor_units(amount)) >= max(1, sent)


def prolific_bonus_send(
    *, assignment: Assignment, amount: Decimal, reason: str, token: str, client: ProlificClient
) -> None:
    batch = assignment.hit.batch
    study = study_of(batch)
    participant = assignment.worker.external_id
    money = f"{Decimal(amount):.2f}"

    def set_up() -> str:
        body = client.call(
            "POST",
            "submissions/bonus-payments/",
            json={"study_id": study, "csv_bonuses": f"{participant},{money}"},
        )
        event_record(
            action=EventAction.PROLIFIC_BONUS_CREATED,
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
        return str(body["id"])

    bulk_bonus = remote_call_once(
        provider=PROVIDER,
        operation="bonus.setup",
        key=f"prolific|bonus-setup|{token}",
        send=set_up,
        look_up=lambda: None,  # not listable; an unpaid set-up costs nothing
        data={"assignment": assignment.pk, "amount": str(amount)},
    )

    def pay() -> str:
        event_record(
            action=EventAction.PROLIFIC_BONUS_PAY_REQUESTED,
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"token": token, "bulk_bonus": bulk_bonus, "amount": str(amount)},
        )
        client.call("POST", f"bulk-bonus-payments/{bulk_bonus}/pay/")
        return NO_OBJECT

    def paid() -> str | None:
        seen = _seen_at_prolific(assignment=assignment, amount=Decimal(amount), client=client)
        return NO_OBJECT if seen else None

    remote_call_once(
        provider=PROVIDER,
        operation="bonus.pay",
        key=f"prolific|bonus-pay|{token}",
        send=pay,
        look_up=paid,
        data={"assignment": assignment.pk, "amount": str(amount), "bulk_bonus": bulk_bonus},
        resend=False,
    )
