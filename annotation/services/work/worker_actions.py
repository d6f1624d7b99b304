"""What researchers do to workers through their crowd provider: bonuses, blocks and
notifications (giving a batch more time or assignments is in `batch_extension.py`).

Each action asks the crowd provider to act, records the outcome and writes an event; each is
idempotent, so a repeated request changes nothing and pays nothing twice.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from annotation.errors import RemoteUnclear, ServiceError
from annotation.models import (
    Assignment,
    AssignmentState,
    Bonus,
    BonusKind,
    EventAction,
    Run,
    Worker,
    WorkerNotice,
    WorkerNoticeState,
)
from annotation.money import symbol
from annotation.providers import provider_for
from annotation.selectors.counting import counted
from annotation.selectors.installation import installation_token
from annotation.services.events import event_record
from pipeline.errors import InputError
from pipeline.money import dollars

TOKEN_MEMORY = timedelta(hours=24)  # how long a platform remembers a request token (MTurk)


def worker_bonus(
    *,
    assignment: Assignment,
    amount: Decimal | str | float,
    reason: str,
    kind: str = BonusKind.BONUS,
) -> Bonus:
    """Pay a bonus for an assignment once: the same amount and reason again pays nothing."""
    amount = dollars(amount, field="amount")
    if not reason.strip():
        raise InputError("a bonus needs a reason the worker will read", field="reason")
    if assignment.state not in (AssignmentState.SUBMITTED, AssignmentState.APPROVED):
        raise ServiceError(
            f"assignment {assignment.pk} is {assignment.state}; bonus submitted work"
        )
    if not assignment.confirmed:
        raise ServiceError(f"assignment {assignment.pk} is not confirmed by its provider yet")
    batch = assignment.hit.batch
    # From the canonical amount ("0.5" and "0.50" are one bonus) and this installation.
    token = installation_token("bonus", batch.environment, assignment.pk, f"{amount:.2f}", reason)
    bonus, _ = Bonus.objects.get_or_create(
        token=token,
        defaults={"assignment": assignment, "amount": amount, "reason": reason, "kind": kind},
    )
    if bonus.sent_at is not None:
        return bonus
    provider = provider_for(batch.provider)
    if bonus.attempted_at is None:
        provider.spend_check(
            amount=provider.bonus_cost(amount=amount), what=f"a {symbol()}{amount} bonus"
        )
    now = timezone.now()
    first = Bonus.objects.filter(pk=bonus.pk, attempted_at__isnull=True).update(attempted_at=now)
    bonus.refresh_from_db()
    # An earlier attempt may have paid it; past MTurk's 24 h token memory, look first.
    look_first = (
        not first and bonus.attempted_at is not None and (now - bonus.attempted_at > TOKEN_MEMORY)
    )
    provider.bonus(
        assignment=assignment, amount=amount, reason=reason, token=token, look_first=look_first
    )
    with transaction.atomic():
        Bonus.objects.filter(pk=bonus.pk).update(sent_at=timezone.now())
        bonus.refresh_from_db()
        event_record(
            action=EventAction.WORKER_BONUS_SENT,
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"amount": str(amount), "reason": reason, "token": token},
        )
    return bonus


BLOCK_SCOPES = ("account", "project")


def run_worker_bonus(*, run: Run, worker: Worker, amount: Decimal | str, reason: str) -> Bonus:
    """A bonus for a worker's work in `run`, paid on their latest counted assignment there."""
    assignment = (
        Assignment.objects.filter(counted(), worker=worker, hit__batch__run=run)
        .order_by("-submitted_at", "-pk")
        .first()
    )
    if assignment is None:
        raise InputError("this worker has no counted work in the run to bonus", field="worker")
    return worker_bonus(assignment=assignment, amount=amount, reason=reason)


def worker_block(*, worker: Worker, reason: str, scope: str | None = None) -> Worker:
    """Block a worker: `account` uses the provider's own block (MTurk: all of the requester
    account's HITs, and it counts against the worker); `project` only this installation's HITs
    (`CrowdProvider.block_in_project`; MTurk: a qualification every HIT type here excludes)."""
    if not reason.strip():
        raise InputError("blocking a worker needs a reason", field="reason")
    provider = provider_for(worker.provider)
    scope = scope or provider.block_scopes[0]  # the provider's first: "account" where it has one
    if scope not in provider.block_scopes:
        raise InputError(f"must be one of {', '.join(provider.block_scopes)}", field="scope")
    if worker.blocked:
        return worker
    if scope == "project":
        provider.block_in_project(worker=worker, reason=reason)
    else:
        provider.block(worker=worker, reason=reason)
    Worker.objects.filter(pk=worker.pk).update(blocked=True, block_scope=scope)
    worker.blocked, worker.block_scope = True, scope
    event_record(
        action=EventAction.WORKER_BLOCKED, worker=worker, data={"reason": reason, "scope": scope}
    )
    return worker


def worker_unblock(*, worker: Worker, reason: str) -> Worker:
    if not worker.blocked:
        return worker
    provider = provider_for(worker.provider)
    if worker.block_scope == "project":
        provider.unblock_in_project(worker=worker, reason=reason or "unblocked")
    else:
        provider.unblock(worker=worker, reason=reason or "unblocked")
    Worker.objects.filter(pk=worker.pk).update(blocked=False, block_scope="")
    worker.blocked, worker.block_scope = False, ""
    event_record(action=EventAction.WORKER_UNBLOCKED, worker=worker, data={"reason": reason})
    return worker


def workers_notify(*, workers: list[Worker], subject: str, message: str) -> int:
    """Send a message once to each worker; returns how many were newly notified. Each
    worker's `WorkerNotice` is committed before their provider is asked: a clear refusal
    removes it (nothing was sent), any other failure leaves it `unclear`, never sent again."""
    if not subject.strip() or not message.strip():
        raise InputError("a notification needs a subject and a message", field="subject/message")
    token = installation_token("notify", subject, message)
    by_provider: dict[str, list[Worker]] = {}
    for worker in workers:
        by_provider.setdefault(worker.provider, []).append(worker)
    notified = 0
    for name, group in by_provider.items():
        mine = [w for w in group if _notice_intent(worker=w, token=token, subject=subject)]
        if not mine:
            continue
        rows = WorkerNotice.objects.filter(token=token, worker__in=mine)
        try:
            provider_for(name).notify(workers=mine, subject=subject, message=message)
        except RemoteUnclear:
            rows.update(state=WorkerNoticeState.UNCLEAR)
            raise
        except ServiceError:  # a clear refusal: nothing was sent
            rows.delete()
            raise
        except Exception:
            rows.update(state=WorkerNoticeState.UNCLEAR)
            raise
        with transaction.atomic():
            rows.update(state=WorkerNoticeState.SENT)
            for worker in mine:
                event_record(
                    action=EventAction.WORKER_NOTIFIED,
                    worker=worker,
                    data={"subject": subject, "token": token},
                )
        notified += len(mine)
    return notified


def _notice_intent(*, worker: Worker, token: str, subject: str) -> bool:
    """Record the intent to send message `token` to `worker`; False if it was recorded
    before (sent, being sent, or unclear)."""
    with transaction.atomic():
        _, new = WorkerNotice.objects.get_or_create(
            worker=worker, token=token, defaults={"subject": subject}
        )
    return new
