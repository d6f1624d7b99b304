"""Issue 25's audit: every API error is JSON with `error`, too large (413) and malformed (400)
bodies included."""

import pytest

pytestmark = pytest.mark.django_db


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
