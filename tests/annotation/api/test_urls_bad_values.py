"""Ids too large for a column in URLs are 404s (issue 8, part 5)."""

import pytest

pytestmark = pytest.mark.django_db


def test_huge_ids_in_urls_are_404(admin_client):
    assert admin_client.get(f"/api/jobs/{2**70}/").status_code == 404
