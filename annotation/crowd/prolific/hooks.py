"""Prolific's webhooks (`submission.status.change`): the signature checked as documented
(HMAC-SHA256 keyed with the workspace's hook secret over the timestamp header followed by the
body, standard base64), unsigned, wrongly signed or stale deliveries refused, and each event
applied once (its X-Event-ID is recorded; Prolific delivers at least once)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import time
from typing import Any

from django.conf import settings

from annotation.crowd.prolific.client import status_normalise
from annotation.crowd.prolific.sync import KNOWN, status_apply, status_unknown
from annotation.errors import ServiceError
from annotation.models import Assignment, Event
from annotation.services.events import event_record

PROVIDER = "prolific"
TOLERANCE = 300  # seconds a delivery's timestamp may differ from our clock


class HookRefused(ServiceError):
    """A delivery that is not Prolific's, or not now."""


def _signature(secret: str, stamp: str, body: bytes) -> bytes:
    digest = hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest)


def hook_verify(*, body: bytes, signature: str, stamp: str, now: float | None = None) -> None:
    """Refuse a delivery not signed with the hook secret, or sent outside TOLERANCE."""
    secret = settings.CROWDVL_PROLIFIC_HOOK_SECRET
    if not secret:
        raise HookRefused("no hook secret is configured (CROWDVL_PROLIFIC_HOOK_SECRET)")
    if not signature or not stamp:
        raise HookRefused("unsigned delivery")
    try:
        sent = float(stamp)
    except ValueError:
        raise HookRefused("unreadable timestamp") from None
    if sent > 1e12:  # milliseconds (the reference does not say which)
        sent /= 1000
    if abs((now or time.time()) - sent) > TOLERANCE:
        raise HookRefused("stale delivery")
    candidates = [body]
    with contextlib.suppress(ValueError):  # the reference's example signs json.dumps's text
        candidates.append(json.dumps(json.loads(body)).encode())
    given = signature.strip().encode()
    if not any(hmac.compare_digest(_signature(secret, stamp, c), given) for c in candidates):
        raise HookRefused("bad signature")


def hook_apply(*, event_id: str, payload: dict[str, Any]) -> bool:
    """Apply one verified event once; whether anything changed."""
    if not event_id:
        raise HookRefused("no X-Event-ID")
    if payload.get("event_type") != "submission.status.change":
        return False
    submission = str(payload.get("resource_id", ""))
    participant = str(payload.get("participant_id", ""))
    status = status_normalise(str(payload.get("status", "")))
    assignment = (
        Assignment.objects.filter(
            provider_assignment_id=submission,
            worker__provider=PROVIDER,
            worker__external_id=participant,
        )
        .select_related("hit__batch__run")
        .first()
    )
    # Two copies at once may both pass this check; applying a status is itself idempotent.
    if Event.objects.filter(action="prolific.hook", data__event_id=event_id).exists():
        return False  # a replay, or Prolific's retry of a delivered event
    event_record(
        action="prolific.hook",
        run=assignment.hit.batch.run if assignment else None,
        batch=assignment.hit.batch if assignment else None,
        assignment=assignment,
        data={"event_id": event_id, "submission": submission, "status": status},
    )
    if assignment is None:
        return False
    if status not in KNOWN:
        status_unknown(
            batch=assignment.hit.batch, submission_id=submission, status=status, source="hook"
        )
        return False
    return status_apply(assignment=assignment, status=status, source="prolific hook")
