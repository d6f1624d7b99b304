"""Issue 25's audit: NUL bytes or invalid UTF-8 in a URL are a 404 before any view."""

import pytest

pytestmark = pytest.mark.django_db


# NUL bytes or invalid UTF-8 in a URL: 404 before any view (PostgreSQL refuses NUL in text).


@pytest.mark.parametrize(
    "url",
    [
        "/join/a\x00b/",
        "/img/a\x00b",
        "/work/?next=a%00b",
        "/work/?next=%ff%fe",
        "/staff/images/1/?x=%00",
        "/api/runs/?dataset=1%00",
        "/api/runs/a\x00b/",
    ],
)
def test_nul_and_invalid_utf8_in_a_url_are_404s(admin_client, client, url):
    for each in (client, admin_client):
        response = each.get(url)
        assert response.status_code == 404
        if url.startswith("/api/"):
            assert response.json()["error"]
