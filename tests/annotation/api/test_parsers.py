"""JSON nested too deep is a 400, not a 500 (issue 8, part 5)."""

import pytest

pytestmark = pytest.mark.django_db


def test_json_nested_5000_deep_is_a_400(admin_client, dataset):
    body = "[" * 5000 + "]" * 5000
    response = admin_client.post("/api/runs/", body, content_type="application/json")
    assert response.status_code == 400 and "nested too deeply" in response.json()["detail"]
