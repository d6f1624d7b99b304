"""Prolific's webhooks (annotation/crowd/prolific/hooks.py), against the stand-in of its API (tests/annotation/crowd/prolific/standin.py): signed, fresh and applied
once."""

import time

import pytest

from annotation.models import AssignmentState, Event
from tests.annotation.crowd.prolific.player import SECRET
from tests.annotation.crowd.prolific.test_provider import draft

pytestmark = pytest.mark.django_db


def test_webhooks_are_signed_fresh_and_applied_once(pro, paired_run, client):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "hooked")
    sid = pro.session("hooked")
    payload = {
        "event_type": "submission.status.change",
        "resource_id": sid,
        "participant_id": pro.pid("hooked"),
        "status": "RETURNED",
    }
    body, headers = pro.standin.signed_hook(SECRET, payload)
    post = lambda b, h: client.post(  # noqa: E731
        "/prolific/hooks/",
        b,
        content_type="application/json",
        **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in h.items()},
    )
    assert post(body, {}).status_code == 403  # unsigned
    forged, forged_headers = pro.standin.signed_hook("not-the-secret", payload)
    assert post(forged, forged_headers).status_code == 403
    stale, stale_headers = pro.standin.signed_hook(
        SECRET, payload, timestamp=int(time.time()) - 3600
    )
    assert post(stale, stale_headers).status_code == 403
    a.refresh_from_db()
    assert a.state == AssignmentState.ACCEPTED  # nothing refused changed anything
    first = post(body, headers)
    assert first.status_code == 200 and first.json() == {"changed": True}
    again = post(body, headers)  # Prolific's retry, or a replay
    assert again.json() == {"changed": False}
    a.refresh_from_db()
    assert a.state == AssignmentState.ABANDONED
    assert Event.objects.filter(action="assignment.abandoned", assignment=a).count() == 1
    # A status this code does not know is kept, never dropped.
    other = pro.take(batch, "odd")
    odd, odd_headers = pro.standin.signed_hook(
        SECRET,
        {
            **payload,
            "resource_id": pro.session("odd"),
            "participant_id": pro.pid("odd"),
            "status": "ON HOLD",
        },
    )
    assert post(odd, odd_headers).json() == {"changed": False}
    assert Event.objects.filter(action="prolific.status_unknown", data__status="ON HOLD").exists()
    other.refresh_from_db()
    assert other.state == AssignmentState.ACCEPTED
