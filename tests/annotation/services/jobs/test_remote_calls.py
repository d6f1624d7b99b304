"""`annotation/services/jobs/remote_calls.py`: an effect outside is sent once, even when a second
request (a double click, a second worker) arrives while the first is sending, and a claim a
crash left behind does not block for ever."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.models import RemoteCall
from annotation.services.jobs.remote_calls import IN_FLIGHT, NO_OBJECT, remote_call_once

pytestmark = pytest.mark.django_db


def test_a_second_request_while_the_first_sends_is_refused_and_nothing_is_sent_twice():
    sent: list[str] = []
    second: list[Exception] = []

    def send() -> str:
        sent.append("pay")
        try:  # the double click arrives while Prolific has not answered yet
            remote_call_once(
                provider="p", operation="pay", key="k", send=send, look_up=lambda: None
            )
        except ServiceError as exc:
            second.append(exc)
        return NO_OBJECT

    assert (
        remote_call_once(provider="p", operation="pay", key="k", send=send, look_up=lambda: None)
        == NO_OBJECT
    )
    assert sent == ["pay"] and "being sent by another request" in str(second[0])
    again = remote_call_once(provider="p", operation="pay", key="k", send=send, look_up=None)
    assert again == NO_OBJECT and sent == ["pay"]  # done: nothing asked, nothing sent
    assert RemoteCall.objects.get(key="k").sending_at is None


def test_a_claim_left_by_a_crash_expires_and_the_effect_is_looked_up_first():
    RemoteCall.objects.create(
        provider="p",
        operation="pay",
        key="crashed",
        attempts=1,
        sending_at=timezone.now() - IN_FLIGHT - timedelta(seconds=1),
    )
    sent: list[str] = []
    found = remote_call_once(
        provider="p",
        operation="pay",
        key="crashed",
        send=lambda: sent.append("x") or NO_OBJECT,
        look_up=lambda: NO_OBJECT,  # the crashed request had paid
        resend=False,
    )
    assert found == NO_OBJECT and sent == []
    RemoteCall.objects.create(
        provider="p", operation="pay", key="fresh", attempts=1, sending_at=timezone.now()
    )
    with pytest.raises(ServiceError, match="being sent by another request"):
        remote_call_once(
            provider="p", operation="pay", key="fresh", send=lambda: "x", look_up=lambda: "x"
        )
