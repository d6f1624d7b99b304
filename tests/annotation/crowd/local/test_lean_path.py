"""The worker's task page GET answered ahead of the generic middleware
(annotation/crowd/local/lean_path.py): the same page and headers as the full stack, and what
it does not answer goes the full way (the page's own rules: crowd/local/test_views.py)."""

import re

import pytest
from django.contrib.auth.models import User
from django.core import signing
from django.test import Client, override_settings

from annotation.crowd.local import lean_path
from annotation.models import Assignment, AssignmentState
from annotation.selectors.work.images import SALT
from config import settings as project_settings
from tests.annotation.pages.work.test_shell import local_batch
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
    # A masked token of the cookie's secret (that it posts: crowd/local/test_views.py).
    assert all(len(t) == 64 for t in CSRF.findall(body)) and response.cookies["csrftoken"].value
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


def test_another_workers_assignment_is_left_to_the_full_way(paired_run, lean_answers):
    batch = local_batch(paired_run)
    alice, bob = Client(), Client()
    join(alice, paired_run, "alice")
    join(bob, paired_run, "bob")
    url = _claim(alice, batch)
    assert bob.get(url).status_code == 404
    assert Client().get(url).status_code == 404  # no session at all
    assert lean_answers == [None, None]  # refused there, answered by the full way
    assert alice.get(url).status_code == 200


def test_a_submitted_assignment_is_left_to_the_full_way(client, paired_run, lean_answers):
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


def test_what_the_stack_refuses_is_left_to_it(client, paired_run, lean_answers):
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
