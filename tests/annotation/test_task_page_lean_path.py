"""The worker's task page GET answered ahead of the generic middleware
(annotation/crowd/local/lean_path.py, issue 32): the same page and headers as the full stack,
the same checks, and everything that is not such a request goes the full way."""

import re

import pytest
from django.contrib.auth.models import User
from django.core import signing
from django.middleware.csrf import CSRF_ALLOWED_CHARS, _unmask_cipher_token, get_token
from django.test import Client, RequestFactory, override_settings

from annotation.crowd.local import lean_path
from annotation.crowd.local.invitations import invitation_revoke
from annotation.models import Assignment, AssignmentState, Invitation
from annotation.pages.work.csrf import csrf_token
from annotation.selectors.images import SALT
from annotation.services.run_texts import run_consent_set
from config import settings as project_settings
from tests.annotation.test_task_page_shell import local_batch
from tests.factories import join

pytestmark = pytest.mark.django_db
FULL_STACK = [m for m in project_settings.MIDDLEWARE if "lean_path" not in m]
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
KEY = re.compile(r'<img src="/img/([^/"]+)/')


def _claim(client, batch) -> str:
    response = client.get(f"/work/{batch.pk}/next/")
    assert response.status_code == 302
    return response["Location"]


def _full_stack_client(client: Client) -> Client:
    """A client with `client`'s cookies whose requests skip the lean path (the handler reads
    MIDDLEWARE on its first request)."""
    other = Client()
    other.cookies = client.cookies
    with override_settings(MIDDLEWARE=FULL_STACK):
        other.get("/health/")
    return other


def _normalized(response) -> tuple:
    """Status, headers in order, cookies and body, with what is random per request (the CSRF
    mask, the page key's timestamp, the cookie's expiry) replaced by what it stands for."""
    body = response.content.decode()
    secret = response.cookies["csrftoken"].value
    assert all(_unmask_cipher_token(t) == secret for t in CSRF.findall(body))
    body = CSRF.sub('name="csrfmiddlewaretoken" value="TOKEN"', body)
    keys = {signing.loads(k, salt=SALT) for k in KEY.findall(body)}
    body = KEY.sub('<img src="/img/KEY/', body)
    cookies = {
        name: {k: v for k, v in morsel.items() if k != "expires"} | {"value": morsel.value}
        for name, morsel in response.cookies.items()
    }
    return response.status_code, list(response.headers.items()), cookies, keys, body


def test_the_lean_path_is_on_with_the_projects_settings():
    assert lean_path.lean_path_on()
    with override_settings(MIDDLEWARE=[*project_settings.MIDDLEWARE, "x.Y"]):
        assert not lean_path.lean_path_on()
    with override_settings(
        MESSAGE_STORAGE="django.contrib.messages.storage.session.SessionStorage"
    ):
        assert not lean_path.lean_path_on()


def test_the_page_and_its_headers_are_the_full_stacks(client, paired_run, lean_answers):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    full = _full_stack_client(client)
    lean_page = client.get(url)
    assert lean_answers and lean_answers[-1] is not None  # answered by the lean path
    full_page = full.get(url)
    assert len(lean_answers) == 1  # the full stack's client never asked it
    assert _normalized(lean_page) == _normalized(full_page)
    assert lean_page["X-Frame-Options"] == "DENY" and lean_page["Vary"] == "Cookie"
    # Over HTTPS with HSTS on, the same again (the header included).
    with override_settings(SECURE_HSTS_SECONDS=600, SESSION_COOKIE_SECURE=True):
        secure_client = Client()
        secure_client.cookies = client.cookies
        lean_page = secure_client.get(url, secure=True)
        full = _full_stack_client(client)
        full_page = full.get(url, secure=True)
    assert _normalized(lean_page) == _normalized(full_page)
    assert lean_page["Strict-Transport-Security"] == "max-age=600"


def test_the_forms_token_is_the_sessions_and_posts(paired_run, lean_answers):
    batch = local_batch(paired_run)
    worker = Client(enforce_csrf_checks=True)
    join(worker, paired_run, "alice")
    url = _claim(worker, batch)
    page = worker.get(url)
    assert lean_answers[-1] is not None
    token = CSRF.search(page.content.decode()).group(1)
    answers = {f"q{n}": "none" for n in range(3)}
    assert worker.post(url, answers).status_code == 403  # no token: refused
    assert worker.post(url, {**answers, "csrfmiddlewaretoken": token}).status_code == 302


def test_another_workers_assignment_is_not_found(paired_run, lean_answers):
    batch = local_batch(paired_run)
    alice, bob = Client(), Client()
    join(alice, paired_run, "alice")
    join(bob, paired_run, "bob")
    url = _claim(alice, batch)
    assert bob.get(url).status_code == 404
    assert Client().get(url).status_code == 404  # no session at all
    assert lean_answers == [None, None]  # refused there, answered by the full way
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


def test_a_submitted_assignment_goes_to_the_next(client, paired_run, lean_answers):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    assignment = Assignment.objects.get(pk=int(url.rstrip("/").rsplit("/", 1)[1]))
    Assignment.objects.filter(pk=assignment.pk).update(state=AssignmentState.SUBMITTED)
    response = client.get(url)
    assert response.status_code == 302 and response["Location"] == f"/work/{batch.pk}/next/"
    assert lean_answers == [None]


def test_a_message_or_a_signed_in_user_goes_the_full_way(client, paired_run, lean_answers):
    batch = local_batch(paired_run, limit=None)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    answers = {f"q{n}": "none" for n in range(3)}
    assert client.post(url, answers).status_code == 302  # "Thank you" waits in a cookie
    url = _claim(client, batch)
    assert client.cookies["messages"].value
    thanked = client.get(url)
    assert "Thank you, your answers were saved." in thanked.content.decode()
    assert lean_answers == []  # the messages cookie: the full way
    # The cookie deleted (a client that keeps it empty): the lean path again.
    assert client.cookies["messages"].value == ""
    assert "Thank you" not in client.get(url).content.decode()
    assert lean_answers[-1] is not None

    researcher = Client()
    researcher.force_login(User.objects.create_user("rita", password="x" * 12))
    join(researcher, paired_run, "rita-as-worker")
    page = researcher.get(_claim(researcher, batch)).content.decode()
    assert 'id="sign-out"' in page and "rita" in page  # the signed-in bar: full way
    assert len(lean_answers) == 1


def test_what_the_stack_refuses_it_refuses(client, paired_run, lean_answers):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    assert client.get(url, HTTP_HOST="evil.example").status_code == 400
    assert client.get(url + "?x=%00").status_code == 404  # BadBytes, on the full way
    with override_settings(SECURE_SSL_REDIRECT=True):
        redirected = Client()
        redirected.cookies = client.cookies
        response = redirected.get(url)
    assert response.status_code == 301 and response["Location"].startswith("https://")
    assert client.head(url).status_code == 405  # the view's answer to HEAD, as before
    assert lean_answers == []


def test_csrf_token_masks_the_cookies_secret_as_django_does():
    request = RequestFactory().get("/")
    get_token(request)  # a new secret, as CsrfViewMiddleware leaves it in META
    secret = request.META["CSRF_COOKIE"]
    request.META["CSRF_COOKIE_NEEDS_UPDATE"] = False
    tokens = {csrf_token(request) for _ in range(200)}
    assert len(tokens) == 200  # a fresh mask each time
    assert all(len(t) == 64 and _unmask_cipher_token(t) == secret for t in tokens)
    assert request.META["CSRF_COOKIE_NEEDS_UPDATE"] is True  # the cookie is sent again
    # Each mask character drawn evenly from the 62: byte % 62 without redrawing bytes of
    # 248 and up would show the first 8 a quarter more often than the rest.
    counts = dict.fromkeys(CSRF_ALLOWED_CHARS, 0)
    for _ in range(20_000):
        for char in csrf_token(request)[:32]:
            counts[char] += 1
    assert max(counts.values()) / min(counts.values()) < 1.1
    fresh = RequestFactory().get("/")
    token = csrf_token(fresh)  # no secret yet: Django's own get_token makes one
    assert _unmask_cipher_token(token) == fresh.META["CSRF_COOKIE"]
