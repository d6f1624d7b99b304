"""A worker's task page (`annotation/crowd/local/views.work_assignment`) as the worker's
browser meets it: the headers of the middleware stack, the form's token, the checks of the
session, the invitation and the assignment, and what the stack refuses."""

import re
import secrets
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.backends import cached_db
from django.contrib.sessions.models import Session
from django.core import signing
from django.core.cache import caches as cache_handler
from django.test import Client, override_settings
from django.utils import timezone

from annotation.crowd.local.invitations import invitation_revoke
from annotation.crowd.local.views import SESSION_WORKER
from annotation.models import Assignment, AssignmentState, Invitation
from annotation.services.runs.run_texts import run_consent_set
from tests.annotation.pages.work.test_shell import local_batch
from tests.factories import join

pytestmark = pytest.mark.django_db
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
CACHED_DB = "django.contrib.sessions.backends.cached_db"
REDIS = "cached_db on Redis"


def _claim(client, batch) -> str:
    response = client.get(f"/work/{batch.pk}/next/")
    assert response.status_code == 302
    return response["Location"]


def _viewed(client, run, label="alice"):
    """`label`'s claimed assignment's URL, its page shown once (so remembered) and its
    session's key."""
    batch = local_batch(run)
    join(client, run, label)
    url = _claim(client, batch)
    assert client.get(url).status_code == 200
    return url, client.cookies["sessionid"].value


def test_the_page_carries_the_stacks_headers(client, paired_run):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    page = client.get(url)
    assert page.status_code == 200
    assert page["X-Frame-Options"] == "DENY" and page["Vary"] == "Cookie"
    assert page["Content-Type"] == "text/html; charset=utf-8"
    assert page.cookies["csrftoken"].value  # the form's secret, sent with the page
    with override_settings(SECURE_HSTS_SECONDS=600, SESSION_COOKIE_SECURE=True):
        other = Client()  # a new handler: the middleware reads these settings when made
        other.cookies = client.cookies
        secure = other.get(url, secure=True)
    assert secure.status_code == 200 and secure["Strict-Transport-Security"] == "max-age=600"


def test_the_forms_token_is_the_sessions_and_posts(paired_run):
    batch = local_batch(paired_run)
    worker = Client(enforce_csrf_checks=True)
    join(worker, paired_run, "alice")
    url = _claim(worker, batch)
    page = worker.get(url)
    token = CSRF.search(page.content.decode()).group(1)
    answers = {f"q{n}": "none" for n in range(3)}
    assert worker.post(url, answers).status_code == 403  # no token: refused
    assert worker.post(url, {**answers, "csrfmiddlewaretoken": token}).status_code == 302


def test_another_workers_assignment_is_not_found(paired_run):
    batch = local_batch(paired_run)
    alice, bob = Client(), Client()
    join(alice, paired_run, "alice")
    join(bob, paired_run, "bob")
    url = _claim(alice, batch)
    assert bob.get(url).status_code == 404
    assert Client().get(url).status_code == 404  # no session at all
    assert alice.get(url).status_code == 200


def test_a_revoked_invitation_is_not_found_and_outdated_consent_keeps_the_task(client, paired_run):
    batch = local_batch(paired_run)
    alice = join(client, paired_run, "alice")
    url = _claim(client, batch)
    assert client.get(url).status_code == 200
    run_consent_set(run=paired_run, text="A new information sheet.")
    assert client.get(url).status_code == 200  # taken under the old text: still theirs
    again = client.get(f"/work/{batch.pk}/next/")  # the next: asked again, on their link's page
    assert again.status_code == 302
    assert again["Location"] == f"/join/{alice.invitations.get(run=paired_run).token}/"
    other = Client()
    join(other, paired_run, "bob")
    url = _claim(other, batch)
    assert other.get(url).status_code == 200
    invitation_revoke(invitation=Invitation.objects.get(run=paired_run, label="bob"))
    assert other.get(url).status_code == 404


def test_a_submitted_assignment_goes_to_the_next(client, paired_run):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    assignment = Assignment.objects.get(pk=int(url.rstrip("/").rsplit("/", 1)[1]))
    Assignment.objects.filter(pk=assignment.pk).update(state=AssignmentState.SUBMITTED)
    response = client.get(url)
    assert response.status_code == 302 and response["Location"] == f"/work/{batch.pk}/next/"


def test_a_message_is_shown_once_and_a_signed_in_user_sees_their_bar(client, paired_run):
    batch = local_batch(paired_run, limit=None)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    answers = {f"q{n}": "none" for n in range(3)}
    assert client.post(url, answers).status_code == 302  # "Thank you" waits in a cookie
    url = _claim(client, batch)
    assert client.cookies["messages"].value
    thanked = client.get(url)
    assert "Thank you, your answers were saved." in thanked.content.decode()
    # The cookie deleted (a client that keeps it empty): no message again.
    assert client.cookies["messages"].value == ""
    assert "Thank you" not in client.get(url).content.decode()

    researcher = Client()
    researcher.force_login(User.objects.create_user("rita", password="x" * 12))
    join(researcher, paired_run, "rita-as-worker")
    page = researcher.get(_claim(researcher, batch)).content.decode()
    assert 'id="sign-out"' in page and "rita" in page  # the signed-in bar


def test_what_the_stack_refuses_it_refuses(client, paired_run):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    assert client.get(url, HTTP_HOST="evil.example").status_code == 400
    assert client.get(url + "?x=%00").status_code == 404
    with override_settings(SECURE_SSL_REDIRECT=True):
        redirected = Client()
        redirected.cookies = client.cookies
        response = redirected.get(url)
    assert response.status_code == 301 and response["Location"].startswith("https://")
    assert client.head(url).status_code == 405  # the view's answer to HEAD, as before


def test_an_expired_session_is_refused_at_once(client, paired_run):
    url, key = _viewed(client, paired_run)
    assert client.get(url).status_code == 200
    Session.objects.filter(pk=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    assert client.get(url).status_code == 404
    assert client.cookies["sessionid"].value == ""  # the cookie deleted


@pytest.mark.parametrize("engine", ["django.contrib.sessions.backends.db", CACHED_DB, REDIS])
def test_a_flushed_session_is_refused_at_once(client, paired_run, engine):
    caches = settings.CACHES
    if engine == REDIS:  # a deployment's shared cache (CROWDVL_CACHE_URL): the real server
        engine = CACHED_DB
        shared = {"LOCATION": "redis://127.0.0.1:6379/11", "KEY_PREFIX": secrets.token_hex(8)}
        caches = {**caches, "default": {"BACKEND": "django_redis.cache.RedisCache", **shared}}
    with override_settings(SESSION_ENGINE=engine, CACHES=caches):
        url, key = _viewed(client, paired_run)
        assert client.get(url).status_code == 200
        if engine == CACHED_DB:  # the page read the cache's copy
            assert cache_handler["default"].get(f"{cached_db.KEY_PREFIX}{key}")
        client.session.flush()  # signed out: the row (and the cache's copy) deleted
        assert not Session.objects.filter(pk=key).exists()
        assert client.get(url).status_code == 404


def test_another_workers_or_a_tampered_session_is_refused(client, paired_run):
    url, key = _viewed(client, paired_run)
    bob = join(client.__class__(), paired_run, "bob")
    # Alice's session row made to name Bob, signed with another salt than the engine's.
    forged = signing.dumps({SESSION_WORKER: bob.pk}, salt="another.salt")
    Session.objects.filter(pk=key).update(session_data=forged)
    assert client.get(url).status_code == 404
    # Signed by the engine itself, Bob's session is a valid session: not Alice's page.
    store = client.session
    store[SESSION_WORKER] = bob.pk
    store.save()
    assert client.get(url).status_code == 404
