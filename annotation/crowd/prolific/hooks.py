"""Prolific's webhooks (`submission.status.change`, `study.has_high_return_rate`): the
signature checked as documented (HMAC-SHA256 keyed with the workspace's hook secret over the
timestamp header followed by the body, standard base64), unsigned, wrongly signed or stale
deliveries refused. Each event is applied once: its X-Event-ID is a unique `HookDelivery` row
written in the same transaction as its effect (Prolific delivers at least once, and retries
after a crash here). Order is not guaranteed, so a submission's status older than one already
applied to it changes nothing."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import re
import time
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from annotation.crowd.prolific.client import (
    ACTIVE,
    APPROVED,
    AWAITING_REVIEW,
    PARTIALLY_APPROVED,
    REJECTED,
    RESERVED,
    status_normalise,
)
from annotation.crowd.prolific.models import HookDelivery, HookOutcome
from annotation.crowd.prolific.return_rate import return_rate_record
from annotation.crowd.prolific.sync import ENDED, KNOWN, status_apply, status_unknown
from annotation.errors import ServiceError
from annotation.models import EXTERNAL_ID_LENGTH, Assignment, Batch, EventAction, Hit
from annotation.services.events import event_record

PROVIDER = "prolific"
TOLERANCE = 300  # seconds a delivery's timestamp may differ from our clock
# Digits, with an optional fraction: float() alone takes "nan", "inf", "1e400" and "1_0",
# and a NaN compares false with everything, so it would pass the staleness check.
STAMP = re.compile(r"[0-9]{1,16}(\.[0-9]{1,9})?")
# Prolific's events are a few hundred bytes; nothing larger is read.
BODY_MAX = 64 * 1024
SUBMISSION_STATUS = "submission.status.change"
HIGH_RETURN_RATE = "study.has_high_return_rate"
HANDLED = (SUBMISSION_STATUS, HIGH_RETURN_RATE)
# How far along Prolific's submission lifecycle a status is: a status ranked below one already
# applied is stale even when its X-Timestamp is newer (that is the time it was sent, and a
# retry is sent later). Returned, timed out and screened out rank with awaiting review: a
# completed submission may still be returned at the researcher's request.
RANK = {
    RESERVED: 0,
    ACTIVE: 1,
    AWAITING_REVIEW: 2,
    **dict.fromkeys(ENDED, 2),
    **dict.fromkeys((APPROVED, PARTIALLY_APPROVED, REJECTED), 3),
}


class HookRefused(ServiceError):
    """A delivery that is not Prolific's, or not now."""


def _signature(secret: str, stamp: str, body: bytes) -> bytes:
    digest = hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest)


def _seconds(stamp: str) -> float:
    if not STAMP.fullmatch(stamp):
        raise ValueError(f"unreadable timestamp {stamp[:40]!r}")
    sent = float(stamp)
    return sent / 1000 if sent > 1e12 else sent  # milliseconds (the reference does not say)


def hook_verify(*, body: bytes, signature: str, stamp: str, now: float | None = None) -> None:
    """Refuse a delivery not signed with the hook secret, or sent outside TOLERANCE."""
    secret = settings.CROWDVL_PROLIFIC_HOOK_SECRET
    if not secret:
        raise HookRefused("no hook secret is configured (CROWDVL_PROLIFIC_HOOK_SECRET)")
    if not signature or not stamp:
        raise HookRefused("unsigned delivery")
    try:
        sent = _seconds(stamp)
    except ValueError:
        raise HookRefused("unreadable timestamp") from None
    if abs((now or time.time()) - sent) > TOLERANCE:
        raise HookRefused("stale delivery")
    candidates = [body]
    with contextlib.suppress(ValueError):  # the reference's example signs json.dumps's text
        candidates.append(json.dumps(json.loads(body)).encode())
    given = signature.strip().encode()
    if not any(hmac.compare_digest(_signature(secret, stamp, c), given) for c in candidates):
        raise HookRefused("bad signature")


def hook_sent_at(stamp: str) -> float | None:
    """A delivery's X-Timestamp in seconds, None when absent or unreadable."""
    try:
        return _seconds(stamp) if stamp else None
    except ValueError:
        return None


def hook_apply(*, event_id: str, payload: dict[str, Any], sent_at: float | None = None) -> bool:
    """Apply one verified event once (`sent_at`: its X-Timestamp); whether anything changed."""
    if not event_id or len(event_id) > EXTERNAL_ID_LENGTH:
        raise HookRefused("no readable X-Event-ID")
    event_type = str(payload.get("event_type", ""))
    status = status_normalise(str(payload.get("status", "")))
    with transaction.atomic():
        try:
            with transaction.atomic():  # a duplicate must not spoil the outer transaction
                delivery = HookDelivery.objects.create(
                    event_id=event_id,
                    event_type=event_type[:60],
                    resource_id=str(payload.get("resource_id", ""))[:EXTERNAL_ID_LENGTH],
                    status=status[:40] if event_type == SUBMISSION_STATUS else "",
                    sent_at=sent_at,
                    outcome=HookOutcome.IGNORED,
                )
        except IntegrityError:
            return False  # applied already (or by a copy that just committed): a retry
        if event_type == SUBMISSION_STATUS:
            outcome, changed = _submission_status(delivery, payload)
        elif event_type == HIGH_RETURN_RATE:
            outcome, changed = _high_return_rate(delivery, payload)
        else:
            outcome, changed = HookOutcome.IGNORED, False
        HookDelivery.objects.filter(pk=delivery.pk).update(outcome=outcome)
    return changed


def _stale(delivery: HookDelivery) -> bool:
    """Whether a status newer than this delivery's was applied to its submission already:
    further along Prolific's lifecycle, or sent later."""
    applied = (
        HookDelivery.objects.filter(
            event_type=SUBMISSION_STATUS,
            resource_id=delivery.resource_id,
            outcome=HookOutcome.APPLIED,
        )
        .exclude(pk=delivery.pk)
        .values_list("status", "sent_at")
    )
    ranks = [RANK.get(status, 0) for status, _sent in applied]
    if ranks and RANK[delivery.status] < max(ranks):
        return True
    stamps = [sent for _status, sent in applied if sent is not None]
    return delivery.sent_at is not None and bool(stamps) and delivery.sent_at < max(stamps)


def _submission_status(delivery: HookDelivery, payload: dict[str, Any]) -> tuple[str, bool]:
    found = (
        Assignment.objects.filter(
            provider_assignment_id=delivery.resource_id,
            worker__provider=PROVIDER,
            worker__external_id=str(payload.get("participant_id", "")),
        )
        .values_list("pk", "hit_id")
        .first()
    )
    if found is None:
        _history(delivery, None, HookOutcome.UNMATCHED)
        return HookOutcome.UNMATCHED, False
    # Locked as `assignment_confirm` locks them (the HIT, then the assignment): another event
    # of this submission waits here, then sees this one's row.
    Hit.objects.select_for_update().filter(pk=found[1]).first()
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("hit__batch__run")
        .get(pk=found[0])
    )
    if delivery.status not in KNOWN:
        status_unknown(
            batch=assignment.hit.batch,
            submission_id=delivery.resource_id,
            status=delivery.status,
            source="hook",
        )
        _history(delivery, assignment, HookOutcome.UNKNOWN)
        return HookOutcome.UNKNOWN, False
    if _stale(delivery):
        _history(delivery, assignment, HookOutcome.STALE)
        return HookOutcome.STALE, False
    _history(delivery, assignment, HookOutcome.APPLIED)
    changed = status_apply(assignment=assignment, status=delivery.status, source="prolific hook")
    return HookOutcome.APPLIED, changed


def _history(delivery: HookDelivery, assignment: Assignment | None, outcome: str) -> None:
    batch = assignment.hit.batch if assignment else None
    event_record(
        action=EventAction.PROLIFIC_HOOK,
        run=batch.run if batch else None,
        batch=batch,
        assignment=assignment,
        data={
            "event_id": delivery.event_id,
            "submission": delivery.resource_id,
            "status": delivery.status,
            "outcome": outcome,
        },
    )


def _high_return_rate(delivery: HookDelivery, payload: dict[str, Any]) -> tuple[str, bool]:
    batch = (
        Batch.objects.filter(provider=PROVIDER, provider_hit_type_id=delivery.resource_id)
        .select_related("run")
        .first()
    )
    if batch is None:  # a study of another installation in the workspace, or a test study
        return HookOutcome.UNMATCHED, False
    metadata = payload.get("metadata")
    changed = return_rate_record(
        batch=batch,
        event_id=delivery.event_id,
        metadata=metadata if isinstance(metadata, dict) else {},
    )
    return HookOutcome.APPLIED, changed
