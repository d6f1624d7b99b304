"""The task page's lean path at the WSGI entry (annotation/crowd/local/lean_entry.py, issue 32):
the same response as Django's handler gives, the same work at the request's start and end as
Django's own signal receivers do (or the signals, where others listen), and every other request
the handler's. Through WSGI environs, as gunicorn calls the app; the tests run outside a
transaction, since a request's start closes a connection left in one (as Django's does)."""

import re
import time
from http.cookies import SimpleCookie

import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection
from django.middleware.csrf import _unmask_cipher_token
from django.test import Client, RequestFactory, override_settings

from annotation.crowd.local.lean_entry import TaskPageEntry, task_page_entry
from config import settings as project_settings
from tests.annotation.test_task_page_shell import local_batch
from tests.factories import join

pytestmark = pytest.mark.django_db(transaction=True)
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
KEY = re.compile(r"/img/([^/\"]+)/")


class CountingHandler(WSGIHandler):
    """Django's handler, counting the requests it was given whole."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __call__(self, environ, start_response):
        self.calls += 1
        return super().__call__(environ, start_response)


def _environ(client: Client, path: str, method: str = "GET", query: str = "") -> dict:
    cookies = "; ".join(f"{k}={v.value}" for k, v in client.cookies.items())
    environ = RequestFactory()._base_environ(
        PATH_INFO=path, REQUEST_METHOD=method, QUERY_STRING=query, HTTP_COOKIE=cookies
    )
    return environ


def _call(app, environ: dict, close=None):
    """Status, headers and body of `app`'s answer, the body closed as a server closes it
    (after `close()`, where given)."""
    sent = []
    body = app(environ, lambda status, headers, exc_info=None: sent.append((status, headers)))
    try:
        content = b"".join(body)
    finally:
        if close:
            close()
        body.close()
    return sent[0][0], sent[0][1], content


def _normalized(status: str, headers: list, content: bytes) -> tuple:
    """As the lean path tests normalise a response: what is random per request replaced."""
    text = content.decode()
    cookie = SimpleCookie()
    for name, value in headers:
        if name == "Set-Cookie":
            cookie.load(value)
    secret = cookie["csrftoken"].value
    assert all(_unmask_cipher_token(t) == secret for t in CSRF.findall(text))
    text = KEY.sub("/img/KEY/", CSRF.sub('name="csrfmiddlewaretoken" value="TOKEN"', text))
    cookies = {
        name: {k: v for k, v in morsel.items() if k != "expires"} | {"value": morsel.value}
        for name, morsel in cookie.items()
    }
    return status, [h for h in headers if h[0] != "Set-Cookie"], cookies, text


@pytest.fixture
def page(client, paired_run):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    response = client.get(f"/work/{batch.pk}/next/")
    assert response.status_code == 302
    url = response["Location"]
    assert client.get(url).status_code == 200  # this process has shown it: the lean path's
    return url


def test_the_projects_wsgi_application_is_the_entry():
    from config import wsgi

    assert isinstance(wsgi.application, TaskPageEntry)
    with override_settings(MIDDLEWARE=[*project_settings.MIDDLEWARE[1:]]):
        handler = WSGIHandler()
    assert task_page_entry(handler) is handler  # no lean path: the handler itself

    def started(**kwargs):
        pass

    signals.request_started.connect(started)
    try:
        handler = WSGIHandler()
        assert task_page_entry(handler) is handler  # another receiver first: the handler
    finally:
        signals.request_started.disconnect(started)
    assert isinstance(task_page_entry(handler), TaskPageEntry)


def test_the_page_is_the_handlers_without_the_handler(client, page, lean_answers):
    handler = CountingHandler()
    entry = task_page_entry(handler)
    lean = _call(entry, _environ(client, page))
    assert handler.calls == 0 and lean_answers[-1] is not None  # the entry answered
    full = _call(handler, _environ(client, page))
    assert handler.calls == 1 and lean_answers[-1] is not None  # the middleware answered
    assert lean[0] == "200 OK"
    assert _normalized(*lean) == _normalized(*full)


def test_what_the_lean_path_leaves_is_the_handlers(client, paired_run, page, lean_answers):
    handler = CountingHandler()
    entry = task_page_entry(handler)
    # A query string, another path, a POST: the handler, given the whole request.
    assert _call(entry, _environ(client, page, query="a=1"))[0] == "200 OK"
    assert _call(entry, _environ(client, "/health/"))[0].startswith("200")
    assert _call(entry, _environ(client, page, method="POST"))[0].startswith("403")  # no token
    assert handler.calls == 3
    # Another worker's assignment: the lean path refuses it once, the handler's stack (not the
    # lean path again) answers 404.
    bob = Client()
    join(bob, paired_run, "bob")
    answers = len(lean_answers)
    status, _, _ = _call(entry, _environ(bob, page))
    assert status.startswith("404")
    assert lean_answers[answers:] == [None]
    assert handler.calls == 3


def test_an_error_in_the_lean_path_leaves_it_to_the_handler(client, page, monkeypatch):
    handler = CountingHandler()
    entry = task_page_entry(handler)

    def fails(request):
        raise LookupError("the lean path failed")

    monkeypatch.setattr(entry.middleware, "lean", fails)
    status, _, content = _call(entry, _environ(client, page))
    assert status == "200 OK" and b"csrfmiddlewaretoken" in content  # the full stack's page
    assert handler.calls == 0  # given to its get_response, the lean path not tried again


def test_a_file_from_the_full_way_goes_to_the_servers_file_wrapper(client, page, monkeypatch):
    """As Django's handler sends a FileResponse: through wsgi.file_wrapper, whose close is the
    response's (request_finished sent)."""
    import io
    from wsgiref.util import FileWrapper

    from django.http import FileResponse

    entry = task_page_entry(WSGIHandler())
    monkeypatch.setattr(entry.middleware, "lean", lambda request: None)
    monkeypatch.setattr(
        entry.handler, "get_response", lambda request: FileResponse(io.BytesIO(b"a file"))
    )
    heard = []

    def finished(**kwargs):
        heard.append("finished")

    environ = {**_environ(client, page), "wsgi.file_wrapper": FileWrapper}
    signals.request_finished.connect(finished)
    try:
        body = entry(environ, lambda status, headers, exc_info=None: None)
        assert isinstance(body, FileWrapper)  # the server may send it as a file
        assert b"".join(body) == b"a file"
        body.close()
    finally:
        signals.request_finished.disconnect(finished)
    assert heard == ["finished"]


def test_a_request_starts_and_ends_as_djangos_receivers_have_it(client, page):
    entry = task_page_entry(WSGIHandler())
    _call(entry, _environ(client, page))
    first = connection.connection
    assert first is not None  # kept between requests (CONN_MAX_AGE)
    # Past its age at the start: closed, and the page read on a new connection.
    connection.close_at = time.monotonic() - 1
    connection.queries_log.append({"sql": "before", "time": "0"})
    _call(entry, _environ(client, page))
    assert connection.connection is not None and connection.connection is not first
    assert not connection.queries_log  # reset_queries
    assert connection.health_check_done is False  # the next request's first read checks it
    # Past its age by the end: closed when the server closes the response.
    kept = connection.connection

    def expire():
        connection.close_at = time.monotonic() - 1

    _call(entry, _environ(client, page), close=expire)
    assert connection.connection is None and kept.closed


def test_other_receivers_get_their_signals(client, page, lean_answers):
    entry = task_page_entry(WSGIHandler())
    heard = []

    def started(**kwargs):
        heard.append("started")

    def finished(**kwargs):
        heard.append("finished")

    signals.request_finished.connect(finished)
    try:
        assert _call(entry, _environ(client, page))[0] == "200 OK"
        assert lean_answers[-1] is not None and heard == ["finished"]
        signals.request_started.connect(started)
        try:
            assert _call(entry, _environ(client, page))[0] == "200 OK"
        finally:
            signals.request_started.disconnect(started)
    finally:
        signals.request_finished.disconnect(finished)
    assert heard == ["finished", "started", "finished"]
    # With the project's receivers only, neither is heard again.
    _call(entry, _environ(client, page))
    assert heard == ["finished", "started", "finished"]
