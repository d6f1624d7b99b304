"""The lean path's later view of a remembered assignment reads the session in the page's own
statement (`lean_path.plain_session_read`, `task_page_session`, issue 32), afresh on every view:
a flushed, expired, tampered or signed-in session is refused at once, as the full way refuses
it; and that statement stands for the connection's health check (`task_page._row`)."""

from datetime import timedelta

import pytest
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.core import signing
from django.db import DatabaseError, connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.crowd.local.views import SESSION_WORKER
from annotation.selectors import task_page as task_page_module
from tests.annotation.test_task_page_shell import local_batch
from tests.factories import join

CACHED_DB = "django.contrib.sessions.backends.cached_db"


def _viewed(client, run, label="alice"):
    """`label`'s claimed assignment's URL, its page shown once (so remembered) and its
    session's key."""
    batch = local_batch(run)
    join(client, run, label)
    response = client.get(f"/work/{batch.pk}/next/")
    assert response.status_code == 302
    url = response["Location"]
    assert client.get(url).status_code == 200
    return url, client.cookies["sessionid"].value


@pytest.mark.django_db
@pytest.mark.parametrize("engine", ["django.contrib.sessions.backends.db", CACHED_DB])
def test_a_later_view_reads_the_session_and_the_page_in_one_statement(
    client, paired_run, lean_answers, engine
):
    with override_settings(SESSION_ENGINE=engine):
        url, _ = _viewed(client, paired_run)
        with CaptureQueriesContext(connection) as ctx:
            page = client.get(url)
    assert page.status_code == 200 and lean_answers[-1] is not None
    assert len(ctx) == 1
    assert "django_session" in ctx[0]["sql"] and "annotation_assignment" in ctx[0]["sql"]
    assert page["Vary"] == "Cookie" and "sessionid" not in page.cookies  # read, not saved


@pytest.mark.django_db
def test_an_expired_session_is_refused_at_once(client, paired_run, lean_answers):
    url, key = _viewed(client, paired_run)
    assert client.get(url).status_code == 200 and lean_answers[-1] is not None
    Session.objects.filter(pk=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    assert client.get(url).status_code == 404
    assert lean_answers[-1] is None
    assert client.cookies["sessionid"].value == ""  # the full way's answer: the cookie deleted


@pytest.mark.django_db
@pytest.mark.parametrize("engine", ["django.contrib.sessions.backends.db", CACHED_DB])
def test_a_flushed_session_is_refused_at_once(client, paired_run, lean_answers, engine):
    with override_settings(SESSION_ENGINE=engine):
        url, key = _viewed(client, paired_run)
        assert client.get(url).status_code == 200 and lean_answers[-1] is not None
        client.session.flush()  # signed out: the row (and the cache's copy) deleted
        assert not Session.objects.filter(pk=key).exists()
        assert client.get(url).status_code == 404
        assert lean_answers[-1] is None


@pytest.mark.django_db
def test_another_workers_or_a_tampered_session_is_refused(client, paired_run, lean_answers):
    url, key = _viewed(client, paired_run)
    bob = join(client.__class__(), paired_run, "bob")
    # Alice's session row made to name Bob, signed with another salt than the engine's.
    forged = signing.dumps({SESSION_WORKER: bob.pk}, salt="another.salt")
    Session.objects.filter(pk=key).update(session_data=forged)
    assert client.get(url).status_code == 404
    assert lean_answers[-1] is None
    # Signed by the engine itself, Bob's session is a valid session: not Alice's page.
    store = client.session
    store[SESSION_WORKER] = bob.pk
    store.save()
    assert client.get(url).status_code == 404
    assert lean_answers[-1] is None


@pytest.mark.django_db
def test_a_session_signed_in_since_goes_the_full_way(client, paired_run, lean_answers):
    url, _ = _viewed(client, paired_run)
    calls = len(lean_answers)
    client.force_login(User.objects.create_user("rita", password="x" * 12))
    assert SESSION_KEY in client.session and client.session.get(SESSION_WORKER) is not None
    page = client.get(url).content.decode()
    assert 'id="sign-out"' in page and "rita" in page  # the signed-in bar
    assert len(lean_answers) == calls  # refused before the view, as before


# --- the statement as the connection's health check --------------------------------------


@pytest.fixture
def usable_calls(monkeypatch):
    """Each health check's answer (Django's `SELECT 1`)."""
    calls = []
    is_usable = connection.is_usable

    def spy():
        calls.append(is_usable())
        return calls[-1]

    monkeypatch.setattr(connection, "is_usable", spy)
    return calls


def _new_request():
    """As `request_started` leaves a kept connection: its health not yet checked."""
    connection.health_check_enabled = True
    connection.health_check_done = False


@pytest.mark.django_db(transaction=True)
def test_the_pages_statement_is_the_health_check(client, paired_run, lean_answers, usable_calls):
    url, _ = _viewed(client, paired_run)
    _new_request()
    assert client.get(url).status_code == 200 and lean_answers[-1] is not None
    assert usable_calls == [] and connection.health_check_done


@pytest.mark.django_db(transaction=True)
def test_a_dropped_connection_is_replaced_and_the_page_answered(
    client, paired_run, lean_answers, usable_calls
):
    url, _ = _viewed(client, paired_run)
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    other = connection.copy()
    with other.cursor() as cursor:  # the server drops the page's connection
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    other.close()
    _new_request()
    assert client.get(url).status_code == 200 and lean_answers[-1] is not None
    assert usable_calls == [False]  # the check after the failed read, as Django's would fail
    assert connection.connection.info.backend_pid != pid


@pytest.mark.django_db(transaction=True)
def test_a_statements_own_error_is_raised_not_retried(usable_calls):
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    _new_request()
    with pytest.raises(DatabaseError):
        task_page_module._row("SELECT no_such_column FROM django_session", [])
    assert usable_calls == [True]  # the connection works: the error was the statement's
    assert connection.connection.info.backend_pid == pid
    assert task_page_module._row("SELECT 1", []) == (1,)


# --- the session row's data decoded (pages/work/session_data.py) ---------------------------


@pytest.mark.parametrize("engine", ["django.contrib.sessions.backends.db", CACHED_DB])
def test_session_decode_is_the_engines(engine):
    from importlib import import_module

    from annotation.pages.work.session_data import session_decode

    store = import_module(engine).SessionStore()
    plain = {SESSION_WORKER: 12, "crowdvl_join": "tok", "ünï": ["ç", {"n": None}]}
    big = {SESSION_WORKER: 3, "text": "the same words again " * 200}  # compressed by encode
    datas = [store.encode(plain), store.encode(big), store.encode({})]
    assert datas[1].startswith(".")
    datas += [
        signing.dumps([1, 2], salt=store.key_salt),  # signed, not a dictionary
        signing.dumps(plain, salt="another.salt"),
        store.encode(plain)[:-2] + "xx",  # a signature that does not verify
        "",
        ":",
        "abc",
        "a:b:c",
        store.encode(plain).replace(":", "!", 1),
    ]
    for data in datas:
        assert session_decode(store, data) == store.decode(data), data
    assert session_decode(store, datas[0]) == plain
    assert session_decode(store, datas[5]) == {}
    # Signed under an old key kept as a fallback: still read; under a dropped one, not.
    with override_settings(SECRET_KEY="old-secret-" + "o" * 40):
        old = store.encode(plain)
    with override_settings(SECRET_KEY_FALLBACKS=["old-secret-" + "o" * 40]):
        assert session_decode(store, old) == store.decode(old) == plain
    assert session_decode(store, old) == store.decode(old) == {}
    with override_settings(SESSION_SERIALIZER=f"{__name__}.MarkingSerializer"):
        store = import_module(engine).SessionStore()
        # Another serializer: the engine's own decode, through it.
        assert session_decode(store, store.encode({"a": 1})) == {"a": 1, "marked": True}


class MarkingSerializer(signing.JSONSerializer):
    def loads(self, data):
        return {**super().loads(data), "marked": True}
