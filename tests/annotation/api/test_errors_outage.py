"""While the database is away a request gets a 503 with Retry-After that retries by itself,
never a 500 (issue 32): pages reload, a posted form is sent again with the same fields, the
API answers JSON. The real outage (a PostgreSQL restart under workers posting through the
pages) is in crowd/local/test_views_postgres_restart.py."""

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.urls("tests.annotation.boom_urls")


@pytest.fixture
def client(settings):
    settings.DEBUG = False
    return Client(raise_request_exception=False)


@pytest.mark.parametrize("url", ["/down/", "/closed/"])
def test_a_page_during_an_outage_is_a_503_that_reloads_itself(client, url):
    page = client.get(url)
    assert page.status_code == 503 and page["Retry-After"] == "5"
    assert page["Content-Type"].startswith("text/html")
    html = page.content.decode()
    assert '<meta http-equiv="refresh" content="5">' in html
    assert "10.0.0.5" not in html and "5432" not in html  # nothing of the error itself


def test_a_posted_form_is_kept_and_sent_again_with_the_same_fields(client):
    page = client.post(
        "/down/",
        {"q0": "left", "q1": ['"><script>alert(1)</script>'], "multi": ["a", "b"]},
    )
    assert page.status_code == 503 and page["Retry-After"] == "5"
    html = page.content.decode()
    fields = re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', html)
    assert fields == [
        ("q0", "left"),
        ("q1", "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("multi", "a"),
        ("multi", "b"),
    ]
    assert "<script>alert(1)" not in html
    assert 'document.getElementById("again").submit()' in html
    assert 'http-equiv="refresh"' not in html  # a reload would lose the post


def test_a_password_is_never_written_back_into_the_page(client):
    page = client.post("/down/", {"username": "alice", "password": "s3cret-pass"})
    assert page.status_code == 503
    html = page.content.decode()
    assert "s3cret-pass" not in html and "<form" not in html
    assert "send it again" in html


def test_the_api_during_an_outage_answers_json_503(client):
    response = client.get("/api/down/")
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.json()["error"].startswith("the database is unavailable")


def test_other_errors_stay_500(client):
    assert client.get("/boom/").status_code == 500
    assert client.get("/api/boom/").status_code == 500
