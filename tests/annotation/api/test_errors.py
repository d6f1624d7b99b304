"""Issue 25's audit and low findings: every API error is JSON with `error` (too large and
malformed bodies included) and tells nothing of the server; other pages keep HTML."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


# Every answer under /api/ is JSON with `error`, including unknown URLs and server errors;
# other pages keep their HTML.


def test_every_api_error_is_json_with_error_and_other_pages_keep_html(admin_client, client):
    unknown_id = admin_client.get("/api/runs/999999/").json()
    for method, url, status in (
        ("get", "/api/", 404),
        ("get", "/api/nothing/", 404),
        ("post", "/api/runs/1/nothing/", 404),
        ("get", "/api/jobs/x/", 404),
        ("put", "/api/runs/", 405),  # DRF's own refusals were JSON already
        ("delete", "/api/jobs/", 405),
    ):
        response = getattr(admin_client, method)(url)
        assert response.status_code == status, url
        assert response["Content-Type"] == "application/json", url
        assert response.json()["error"]
        if status == 404:  # the same body as a known URL's unknown id
            assert response.json() == unknown_id, url
        anonymous = getattr(client, method)(url)  # unknown URLs: 404 before authentication
        assert anonymous["Content-Type"] == "application/json" and anonymous.json()["error"]
    page = admin_client.get("/nothing/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
    assert b"Not found" in page.content


@pytest.mark.urls("tests.annotation.boom_urls")
def test_a_server_error_under_the_api_is_json_and_tells_nothing(settings):
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    response = client.get("/api/boom/")
    assert response.status_code == 500
    assert response.json() == {"error": "server error", "detail": "server error"}
    page = client.get("/boom/")
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")


# Every API error is JSON with `error`: too large (413) and malformed (400) bodies.


def test_a_too_large_or_malformed_api_body_is_a_json_error(admin_client):
    big = b'{"dataset": "' + b"x" * (30 * 1024 * 1024) + b'"}'
    response = admin_client.post("/api/runs/", big, content_type="application/json")
    assert response.status_code == 413 and "error" in response.json()
    form = b"dataset=" + b"x" * (30 * 1024 * 1024)
    response = admin_client.post(
        "/api/runs/", form, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 413 and "error" in response.json()
    for body in (b'{"dataset": ', b"\xff\xfe", b"[" * 100_000):
        response = admin_client.post("/api/runs/", body, content_type="application/json")
        assert response.status_code == 400 and response.json()["error"]
