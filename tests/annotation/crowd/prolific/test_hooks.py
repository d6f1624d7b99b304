"""Prolific's webhooks as documented (issue 45): each event applied once in one transaction
with its X-Event-ID row (retries after a crash apply it, two copies at once apply it once),
out-of-order statuses never move a submission back, the high-return-rate event warns on the
batch page, and `prolific_hooks` / the console's button make the secret and the confirmed
subscriptions once, against the stand-in's hooks endpoints."""

import base64
import hashlib
import hmac
import json
import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client

from annotation.crowd.prolific import hooks
from annotation.crowd.prolific.client import ProlificError
from annotation.crowd.prolific.models import HighReturnRate, HookDelivery, HookOutcome
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import AssignmentState, Event
from annotation.services.runs.batches import batch_create
from tests.annotation.crowd.prolific.player import SECRET

pytestmark = pytest.mark.django_db

HOOK_URL = "https://crowd.example.org/prolific/hooks/"
HANDLED = {"submission.status.change", "study.has_high_return_rate"}


def draft(run, **options):
    return batch_create(
        run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=2, **options
    )


def post(client, body, headers):
    return client.post(
        "/prolific/hooks/",
        body,
        content_type="application/json",
        **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()},
    )


def status_event(pro, name, status, *, at=None, event_id=None):
    """A signed `submission.status.change` for the participant `name` (sent at `at`)."""
    payload = {
        "event_type": "submission.status.change",
        "resource_id": pro.session(name),
        "participant_id": pro.pid(name),
        "status": status,
    }
    body, headers = pro.standin.signed_hook(SECRET, payload, timestamp=at)
    if event_id:
        headers["X-Event-ID"] = event_id
    return body, headers


def submitted_here(pro, batch, name):
    """The participant answers here and reaches Prolific's completion URL; nothing polls."""
    a = pro.take(batch, name)
    answers = {f"q{q.position}": "none" for q in a.hit.questions.all()}
    response = pro.browsers[pro.pid(name)].post(f"/prolific/assignment/{a.pk}/", answers)
    assert response.status_code == 302
    assert pro.complete_at_prolific(pro.pid(name), response["Location"]) == "AWAITING REVIEW"
    a.refresh_from_db()
    assert a.state == AssignmentState.SUBMITTED and not a.confirmed
    return a


# --- once ----------------------------------------------------------------------------------


def test_a_duplicate_delivery_is_applied_once(pro, paired_run, client):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "twice")
    body, headers = status_event(pro, "twice", "RETURNED")
    assert post(client, body, headers).json() == {"changed": True}
    assert post(client, body, headers).json() == {"changed": False}  # Prolific's retry
    a.refresh_from_db()
    assert a.state == AssignmentState.ABANDONED
    assert Event.objects.filter(action="assignment.abandoned", assignment=a).count() == 1
    [row] = HookDelivery.objects.filter(event_id=headers["X-Event-ID"])
    assert row.outcome == HookOutcome.APPLIED and row.resource_id == pro.session("twice")


def test_a_crash_between_recording_and_applying_is_applied_on_the_retry(
    pro, paired_run, monkeypatch
):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "crash")
    real = hooks.status_apply
    crashes = []

    def crash_once(**kwargs):
        if not crashes:
            crashes.append(kwargs["status"])
            raise RuntimeError("the worker died here")
        return real(**kwargs)

    monkeypatch.setattr(hooks, "status_apply", crash_once)
    body, headers = status_event(pro, "crash", "RETURNED")
    browser = Client(raise_request_exception=False)
    assert post(browser, body, headers).status_code == 500  # Prolific retries a non-2xx
    assert not HookDelivery.objects.filter(event_id=headers["X-Event-ID"]).exists()
    a.refresh_from_db()
    assert a.state == AssignmentState.ACCEPTED
    retry = post(browser, body, headers)  # the same X-Event-ID, as Prolific resends it
    assert retry.status_code == 200 and retry.json() == {"changed": True}
    a.refresh_from_db()
    assert a.state == AssignmentState.ABANDONED
    assert crashes == ["RETURNED"]
    assert HookDelivery.objects.get(event_id=headers["X-Event-ID"]).outcome == "applied"


@pytest.mark.django_db(transaction=True)
def test_two_copies_at_once_are_applied_once(pro, paired_run, monkeypatch):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "copies")
    real = hooks.event_record

    def slow(**kwargs):  # between the look for the event id and what it decides: both there
        time.sleep(0.3)
        return real(**kwargs)

    monkeypatch.setattr(hooks, "event_record", slow)
    body, headers = status_event(pro, "copies", "RETURNED")
    barrier = threading.Barrier(2)
    answers, errors = [], []

    def deliver():
        try:
            barrier.wait()
            answers.append(post(Client(), body, headers).json())
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(x["changed"] for x in answers) == [False, True]
    a.refresh_from_db()
    assert a.state == AssignmentState.ABANDONED
    assert Event.objects.filter(action="assignment.abandoned", assignment=a).count() == 1
    assert (
        Event.objects.filter(action="prolific.hook", data__event_id=headers["X-Event-ID"]).count()
        == 1
    )


# --- order ---------------------------------------------------------------------------------


def test_an_older_status_never_moves_a_submission_back(pro, paired_run, client):
    batch = pro.publish(draft(paired_run))
    a = submitted_here(pro, batch, "late")
    now = int(time.time())
    assert post(client, *status_event(pro, "late", "AWAITING REVIEW", at=now)).json() == {
        "changed": True
    }
    a.refresh_from_db()
    assert a.confirmed and a.state == AssignmentState.SUBMITTED
    # RETURNED sent a minute before AWAITING REVIEW, delivered after it (a retry).
    body, headers = status_event(pro, "late", "RETURNED", at=now - 60)
    assert post(client, body, headers).json() == {"changed": False}
    assert HookDelivery.objects.get(event_id=headers["X-Event-ID"]).outcome == HookOutcome.STALE
    # ACTIVE resent later than AWAITING REVIEW: its send time is newer, its status older.
    assert post(client, *status_event(pro, "late", "ACTIVE", at=now + 10)).json() == {
        "changed": False
    }
    a.refresh_from_db()
    assert a.confirmed and a.state == AssignmentState.SUBMITTED
    assert not Event.objects.filter(action="assignment.abandoned", assignment=a).exists()
    # A return sent after AWAITING REVIEW (requested by the researcher) still applies.
    assert post(client, *status_event(pro, "late", "RETURNED", at=now + 20)).json() == {
        "changed": True
    }
    a.refresh_from_db()
    assert a.state == AssignmentState.ABANDONED


def test_active_after_returned_changes_nothing(pro, paired_run, client):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "gone")
    now = int(time.time())
    assert post(client, *status_event(pro, "gone", "RETURNED", at=now)).json()["changed"]
    for status, at in (("ACTIVE", now - 30), ("ACTIVE", now + 5), ("RESERVED", now - 60)):
        assert post(client, *status_event(pro, "gone", status, at=at)).json() == {"changed": False}
    a.refresh_from_db()
    assert a.state == AssignmentState.ABANDONED
    assert Event.objects.filter(action="assignment.abandoned", assignment=a).count() == 1


def test_awaiting_review_after_approved_changes_nothing(pro, paired_run, client):
    batch = pro.publish(draft(paired_run))
    a = submitted_here(pro, batch, "quick")
    now = int(time.time())
    assert post(client, *status_event(pro, "quick", "APPROVED", at=now)).json()["changed"]
    a.refresh_from_db()
    assert a.state == AssignmentState.APPROVED and a.confirmed
    older = status_event(pro, "quick", "AWAITING REVIEW", at=now - 30)
    assert post(client, *older).json() == {"changed": False}
    a.refresh_from_db()
    assert a.state == AssignmentState.APPROVED
    assert a.auto_approve_at is None  # no approval deadline on approved work


# --- high return rate ----------------------------------------------------------------------


def test_a_high_return_rate_warns_on_the_batch_page(pro, paired_run, client, admin_client):
    batch = pro.publish(draft(paired_run))
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    assert "high return rate" not in page
    payload = {
        "event_type": "study.has_high_return_rate",
        "resource_id": batch.provider_hit_type_id,
        "metadata": {},
    }
    body, headers = pro.standin.signed_hook(SECRET, payload)
    assert post(client, body, headers).json() == {"changed": True}
    assert post(client, body, headers).json() == {"changed": False}  # a retry
    again = pro.standin.signed_hook(SECRET, payload)  # Prolific says it again: a new event
    assert post(client, *again).json() == {"changed": False}
    row = HighReturnRate.objects.get(batch=batch)
    assert row.reports == 2
    assert Event.objects.filter(action="prolific.high_return_rate", batch=batch).count() == 2
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    assert "Warning: high return rate" in page and "2 reports" in page
    # A study this installation does not know (another one's in the workspace) is left alone.
    other = pro.standin.signed_hook(SECRET, {**payload, "resource_id": pro.standin.new_id()})
    assert post(client, *other).json() == {"changed": False}
    assert HighReturnRate.objects.count() == 1


# --- setting up: the command, the stand-in, the button ---------------------------------------


def secret_at_prolific(pro, value=SECRET):
    """The secret the driver configures, as made at Prolific by an earlier setup."""
    workspace = pro.standin.workspace
    pro.standin.hook_secrets[workspace] = {
        "id": pro.standin.new_id(),
        "value": value,
        "workspace_id": workspace,
    }


def hooks_command(*args):
    out = StringIO()
    call_command("prolific_hooks", *args, stdout=out)
    return out.getvalue()


def subscription_posts(pro):
    return [c for c in pro.standin.calls if c == ("POST", "hooks/subscriptions/")]


def test_the_command_makes_the_secret_subscribes_confirms_and_hooks_arrive(
    pro, paired_run, client, settings
):
    settings.CROWDVL_PROLIFIC_HOOK_SECRET = ""
    out = hooks_command()
    secret = pro.standin.hook_secrets[pro.standin.workspace]["value"]
    assert f"CROWDVL_PROLIFIC_HOOK_SECRET={secret}\n" in out
    subs = list(pro.standin.hook_subscriptions.values())
    assert {s["event_type"] for s in subs} == HANDLED and len(subs) == 2
    assert all(s["target_url"] == HOOK_URL for s in subs)
    assert pro.standin.hook_confirmed == {s["id"] for s in subs}
    dump = StringIO()
    call_command("dumpdata", "annotation", "crowd_prolific", stdout=dump)
    assert secret not in dump.getvalue()  # shown once, never stored
    # The operator puts it in the environment; a re-run subscribes nothing twice.
    settings.CROWDVL_PROLIFIC_HOOK_SECRET = secret
    again = hooks_command()
    assert "CROWDVL_PROLIFIC_HOOK_SECRET" not in again
    assert again.count("already subscribed") == 2
    assert len(subscription_posts(pro)) == 2 and len(pro.standin.hook_subscriptions) == 2
    assert pro.standin.calls.count(("POST", "hooks/secrets/")) == 1
    # Prolific delivers to the confirmed subscription, signed with the new secret.
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "delivered")
    [(target, body, headers)] = pro.standin.hook_deliveries(
        {
            "event_type": "submission.status.change",
            "resource_id": pro.session("delivered"),
            "participant_id": pro.pid("delivered"),
            "status": "RETURNED",
        }
    )
    assert target == HOOK_URL
    assert post(client, body, headers).json() == {"changed": True}
    a.refresh_from_db()
    assert a.state == AssignmentState.ABANDONED


def test_a_new_secret_only_when_asked_and_resubscribing(pro, settings):
    secret_at_prolific(pro)
    hooks_command()  # the driver configures a secret: none is made
    assert pro.standin.calls.count(("POST", "hooks/secrets/")) == 0
    assert "CROWDVL_PROLIFIC_HOOK_SECRET" not in hooks_command()
    before = set(pro.standin.hook_subscriptions)
    out = hooks_command("--new-secret", "--resubscribe")
    secret = pro.standin.hook_secrets[pro.standin.workspace]["value"]
    assert f"CROWDVL_PROLIFIC_HOOK_SECRET={secret}" in out
    assert out.count("removed subscription") == 2 and out.count("subscribed and confirmed") == 2
    after = set(pro.standin.hook_subscriptions)
    assert len(after) == 2 and not after & before
    assert pro.standin.hook_confirmed >= after


def test_a_lost_answer_is_looked_up_never_sent_again(pro):
    secret_at_prolific(pro)
    # The subscription is made, then the answer (with its X-Hook-Secret) is lost.
    pro.standin.lose("POST", r"hooks/subscriptions/")
    with pytest.raises(CommandError):
        hooks_command()
    assert len(subscription_posts(pro)) == 2  # one per event type: nothing resent
    # What the lost call made cannot be confirmed (its X-Hook-Secret was lost): removed.
    assert [m for m, _path in pro.standin.calls].count("DELETE") == 1
    subs = list(pro.standin.hook_subscriptions.values())
    assert [s["event_type"] for s in subs] == ["study.has_high_return_rate"]
    assert pro.standin.hook_confirmed == {subs[0]["id"]}
    # Refused before it acted (a 5xx after a POST is unclear too): listed, nothing made.
    pro.standin.fail("POST", r"hooks/subscriptions/", status=502)
    with pytest.raises(CommandError):
        hooks_command()
    assert len(pro.standin.hook_subscriptions) == 1
    out = hooks_command()  # the next run finishes the job
    assert "subscribed and confirmed" in out and "already subscribed" in out
    subs = list(pro.standin.hook_subscriptions.values())
    assert sorted(s["event_type"] for s in subs) == sorted(HANDLED)
    assert pro.standin.hook_confirmed == {s["id"] for s in subs}


def test_a_lost_secret_answer_is_read_back(pro, settings):
    settings.CROWDVL_PROLIFIC_HOOK_SECRET = ""
    pro.standin.lose("POST", r"hooks/secrets/")
    out = hooks_command()
    secret = pro.standin.hook_secrets[pro.standin.workspace]["value"]
    assert f"CROWDVL_PROLIFIC_HOOK_SECRET={secret}" in out
    assert pro.standin.calls.count(("POST", "hooks/secrets/")) == 1


def test_a_public_url_without_https_is_refused_before_any_call(pro, settings):
    settings.CROWDVL_PUBLIC_URL = "http://127.0.0.1:8000"
    with pytest.raises(CommandError, match="CROWDVL_PUBLIC_URL"):
        hooks_command()
    assert pro.standin.calls == []


def test_the_stand_in_refuses_as_documented(pro):
    call = pro.client.call
    workspace = pro.standin.workspace
    subscribe = {"event_type": "submission.status.change", "target_url": HOOK_URL}
    with pytest.raises(ProlificError, match="secret"):  # a secret must exist first
        call("POST", "hooks/subscriptions/", json={**subscribe, "workspace_id": workspace})
    with pytest.raises(ProlificError, match="workspace_id"):
        call("GET", "hooks/subscriptions/")
    made = call("POST", "hooks/secrets/", json={"workspace_id": workspace})
    assert len(made["id"]) == 24 and made["workspace_id"] == workspace
    replaced = call("POST", "hooks/secrets/", json={"workspace_id": workspace})
    listed = call("GET", "hooks/secrets/", params={"workspace_id": workspace})["results"]
    assert [s["value"] for s in listed] == [replaced["value"]] != [made["value"]]
    with pytest.raises(ProlificError, match="event type"):
        call(
            "POST",
            "hooks/subscriptions/",
            json={**subscribe, "event_type": "x", "workspace_id": workspace},
        )
    with pytest.raises(ProlificError, match="https"):
        call(
            "POST",
            "hooks/subscriptions/",
            json={**subscribe, "target_url": "http://x.org/", "workspace_id": workspace},
        )
    sub = call("POST", "hooks/subscriptions/", json={**subscribe, "workspace_id": workspace})
    assert len(sub["id"]) == 24
    with pytest.raises(ProlificError, match="X-Hook-Secret"):
        call("POST", f"hooks/subscriptions/{sub['id']}/", json={"secret": "wrong"})
    with pytest.raises(ProlificError) as missing:
        call("POST", f"hooks/subscriptions/{pro.standin.new_id()}/", json={"secret": "x"})
    assert missing.value.status == 404
    types = call("GET", "hooks/event-types/")["results"]
    assert {t["event_type"] for t in types} >= HANDLED


def test_the_console_button_is_staff_only_and_runs_the_same_setup(
    pro, settings, admin_client, client, django_user_model
):
    settings.CROWDVL_PROLIFIC_HOOK_SECRET = ""
    user = django_user_model.objects.create_user("researcher", password="pw")
    client.force_login(user)
    assert client.post("/prolific/reconcile/", {"action": "hooks"}).status_code == 403
    assert pro.standin.calls == []
    page = admin_client.get("/prolific/reconcile/").content.decode()
    assert 'id="hooks"' in page
    response = admin_client.post("/prolific/reconcile/", {"action": "hooks"})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    secret = pro.standin.hook_secrets[pro.standin.workspace]["value"]
    text = response.content.decode()
    assert f"CROWDVL_PROLIFIC_HOOK_SECRET={secret}" in text
    assert text.count("<li>subscribed and confirmed: ") == 2
    settings.CROWDVL_PROLIFIC_HOOK_SECRET = secret
    again = admin_client.post("/prolific/reconcile/", {"action": "hooks"}).content.decode()
    assert again.count("<li>already subscribed: ") == 2 and secret not in again
    assert len(pro.standin.hook_subscriptions) == 2


# --- unreadable timestamps and oversized bodies (issue 47) ----------------------------------


def signed_with(stamp, body=b'{"event_type": "submission.status.change"}'):
    """A body signed with the hook secret over `stamp`: only the timestamp can be wrong."""
    digest = hmac.new(SECRET.encode(), stamp.encode() + body, hashlib.sha256).digest()
    return body, base64.b64encode(digest).decode()


@pytest.mark.parametrize(
    "stamp",
    ["nan", "NaN", "inf", "-inf", "1e400", "", "soon", "1_700_000_000", " 1700000000", "-5"],
)
def test_a_timestamp_that_is_not_a_time_now_is_refused(settings, stamp):
    # "nan" passed before: a NaN compares false with the tolerance, so it was never stale.
    settings.CROWDVL_PROLIFIC_HOOK_SECRET = SECRET
    body, signature = signed_with(stamp)
    with pytest.raises(hooks.HookRefused):
        hooks.hook_verify(body=body, signature=signature, stamp=stamp)
    assert hooks.hook_sent_at(stamp) is None


def test_a_far_future_or_past_timestamp_is_stale_and_now_is_not(settings):
    settings.CROWDVL_PROLIFIC_HOOK_SECRET = SECRET
    now = time.time()
    for stamp in (str(int(now) + 10**9), str(int(now * 1000) + 10**12), "9" * 16, "0"):
        body, signature = signed_with(stamp)
        with pytest.raises(hooks.HookRefused, match="stale|unreadable"):
            hooks.hook_verify(body=body, signature=signature, stamp=stamp)
    for stamp in (str(int(now)), str(int(now * 1000)), f"{now:.3f}"):
        body, signature = signed_with(stamp)
        hooks.hook_verify(body=body, signature=signature, stamp=stamp)


def test_a_nan_x_timestamp_orders_nothing(settings):
    assert hooks.hook_sent_at("nan") is None and hooks.hook_sent_at("inf") is None


@pytest.mark.parametrize("size", [hooks.BODY_MAX + 1, 30 * 1024 * 1024])
def test_an_oversized_body_is_a_json_413_naming_the_limit(settings, client, size):
    # A 30 MB body answered Django's HTML 400 page (RequestDataTooBig) before.
    settings.CROWDVL_PROLIFIC_HOOK_SECRET = SECRET
    response = client.post("/prolific/hooks/", b"x" * size, content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert response.json()["limit"] == hooks.BODY_MAX
    assert str(hooks.BODY_MAX) in response.json()["error"]


def test_the_declared_length_is_checked_before_the_body_is_read(settings, rf):
    from annotation.crowd.prolific.views import prolific_hook

    class Unreadable:
        def read(self, *args):
            raise AssertionError("the body was read")

        readline = read

    request = rf.post("/prolific/hooks/", b"", content_type="application/json")
    request.META["CONTENT_LENGTH"] = str(hooks.BODY_MAX + 1)
    request._stream = Unreadable()
    response = prolific_hook(request)
    assert response.status_code == 413
    assert json.loads(response.content)["limit"] == hooks.BODY_MAX
    request.META["CONTENT_LENGTH"] = "-1"
    assert prolific_hook(request).status_code == 413
