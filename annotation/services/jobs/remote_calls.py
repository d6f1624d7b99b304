"""Calls with an effect at a provider, made once: the intent is a `RemoteCall` row committed
before the call is sent. A second attempt (a re-run job, a person pressing the button again)
finds the row and looks the object up at the provider first; after a lost answer the object
is looked up at once. Nothing here retries a call: a call is sent again only when an earlier
attempt is known not to have taken effect (the look-up found nothing and the call may be
repeated), never for a payment (`resend=False`), which waits for a person instead."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.errors import RemoteUnclear, ServiceError
from annotation.models import RemoteCall, RemoteCallState

# The id recorded for an effect that makes no object of its own (a payment, a message).
NO_OBJECT = "-"
# Longer than the client's attempts at one call: a claim older than this was left by a crash.
IN_FLIGHT = timedelta(minutes=5)


def remote_call_row(*, provider: str, operation: str, key: str, data: dict[str, Any]) -> RemoteCall:
    """The intent's row, created (and committed) if it is new."""
    with transaction.atomic():
        row, _ = RemoteCall.objects.get_or_create(
            key=key, defaults={"provider": provider, "operation": operation, "data": data}
        )
    return row


def _answered(row: RemoteCall, *, remote_id: str, state: str, error: str = "") -> None:
    RemoteCall.objects.filter(pk=row.pk).update(
        state=state, remote_id=remote_id, error=error, answered_at=timezone.now()
    )
    row.state, row.remote_id, row.error = state, remote_id, error


def remote_call_once(
    *,
    provider: str,
    operation: str,
    key: str,
    send: Callable[[], str],
    look_up: Callable[[], str | None],
    data: dict[str, Any] | None = None,
    resend: bool = True,
) -> str:
    """The id of what the one effect `key` names made at the provider (NO_OBJECT for an effect
    without an object). `send` makes the call (raising `RemoteUnclear` when the answer was
    lost); `look_up` finds the effect at the provider (None: not there). With `resend=False` an
    effect once sent is never sent again here: not found, it is left for a person."""
    row = remote_call_row(provider=provider, operation=operation, key=key, data=data or {})
    if row.state == RemoteCallState.DONE:
        return row.remote_id
    _claim(row)
    try:
        row.refresh_from_db()
        if row.state == RemoteCallState.DONE:  # the request before this one finished it
            return row.remote_id
        return _look_up_or_send(row, send=send, look_up=look_up, resend=resend)
    finally:
        RemoteCall.objects.filter(pk=row.pk).update(sending_at=None)


def _claim(row: RemoteCall) -> None:
    """This request alone looks the effect up or sends it: another one in flight (a double
    click, a second worker) is refused. A claim older than IN_FLIGHT was left by a crash."""
    now = timezone.now()
    claimed = (
        RemoteCall.objects.filter(pk=row.pk)
        .filter(Q(sending_at__isnull=True) | Q(sending_at__lt=now - IN_FLIGHT))
        .update(sending_at=now)
    )
    if not claimed:
        raise ServiceError(
            f"{row.provider} {row.operation} ({row.key}) is being sent by another request right "
            "now: try again in a minute"
        )


def _look_up_or_send(
    row: RemoteCall, *, send: Callable[[], str], look_up: Callable[[], str | None], resend: bool
) -> str:
    provider, operation, key = row.provider, row.operation, row.key
    if row.attempts:
        found = look_up()
        if found:
            _answered(row, remote_id=found, state=RemoteCallState.DONE)
            return found
        if not resend:
            raise ServiceError(
                f"{provider} {operation} ({key}) was sent before without a clear answer and is "
                "not shown at the platform yet: sending it again could do it twice; check at "
                f"the platform, then record it there ({row.error or 'no answer'})"
            )
    RemoteCall.objects.filter(pk=row.pk).update(attempts=F("attempts") + 1)
    row.attempts += 1
    try:
        remote_id = send()
    except RemoteUnclear as exc:
        found = look_up()
        if found:
            _answered(row, remote_id=found, state=RemoteCallState.DONE)
            return found
        _answered(row, remote_id="", state=RemoteCallState.UNCLEAR, error=str(exc)[:2000])
        raise RemoteUnclear(
            f"{exc}: it may have taken effect and is not found at {provider} yet; the next "
            "attempt looks it up before sending anything"
        ) from None
    except ServiceError as exc:  # a clear refusal: nothing happened there
        RemoteCall.objects.filter(pk=row.pk).update(
            attempts=F("attempts") - 1, error=str(exc)[:2000]
        )
        raise
    _answered(row, remote_id=remote_id or NO_OBJECT, state=RemoteCallState.DONE)
    return row.remote_id
