"""A run's workers through the API, as on the workers page: the rows with their numbers,
block/unblock and notify (researchers: account-wide), bonus (the run's money), only for
workers with work in the run."""

from decimal import Decimal

import pytest

from annotation.models import Bonus, Event, ProjectRole, Worker
from annotation.selectors.runs.run_workers import run_workers
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.api.test_urls_lists import member
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


def test_workers_listed_and_acted_on(paired_run, django_user_model, schema):  # noqa: F811
    selection_done_factory(paired_run, workers=2)
    alice = member(django_user_model, paired_run, "alice", ProjectRole.RESEARCHER)
    rita = member(django_user_model, paired_run, "rita", ProjectRole.REVIEWER)
    base = f"/api/runs/{paired_run.pk}/workers/"
    response = rita.get(base)
    assert response.status_code == 200
    check(schema, "/api/runs/{run_id}/workers/", "get", response)
    rows = {r.worker.pk: r for r in run_workers(run=paired_run)}
    body = response.json()
    assert body["count"] == len(rows) == 2
    for row in body["results"]:
        assert row["assignments"] == rows[row["id"]].assignments > 0
        assert Decimal(row["paid"]) == rows[row["id"]].paid

    worker_id = body["results"][0]["id"]
    block = {"reason": "copied answers", "scope": "project"}
    assert rita.post(f"{base}{worker_id}/block/", block, format="json").status_code == 403
    response = alice.post(f"{base}{worker_id}/block/", block, format="json")
    assert response.status_code == 200, response.json()
    check(schema, "/api/runs/{run_id}/workers/{worker_id}/block/", "post", response)
    assert response.json()["blocked"] and Worker.objects.get(pk=worker_id).blocked
    response = alice.post(f"{base}{worker_id}/unblock/", {"reason": "appeal"}, format="json")
    check(schema, "/api/runs/{run_id}/workers/{worker_id}/unblock/", "post", response)
    assert response.json()["blocked"] is False
    bad = alice.post(f"{base}{worker_id}/block/", {"reason": "x", "scope": "world"})
    assert bad.status_code == 400 and bad.json()["field"] == "scope"

    response = alice.post(
        f"{base}{worker_id}/bonus/", {"amount": "0.50", "reason": "thanks"}, format="json"
    )
    assert response.status_code == 201, response.json()
    check(schema, "/api/runs/{run_id}/workers/{worker_id}/bonus/", "post", response)
    bonus = Bonus.objects.get(pk=response.json()["bonus"])
    assert bonus.amount == Decimal("0.50") and bonus.assignment.worker_id == worker_id
    assert rita.post(f"{base}{worker_id}/bonus/", {"amount": "1", "reason": "x"}).status_code == 403

    ids = [r["id"] for r in body["results"]]
    note = {"workers": ids, "subject": "New batch", "message": "Stage 3 is open."}
    response = alice.post(f"{base}notify/", note, format="json")
    assert response.status_code == 200, response.json()
    check(schema, "/api/runs/{run_id}/workers/notify/", "post", response)
    assert response.json() == {"sent": 2, "already": 0}

    stranger = Worker.objects.create(provider="local", external_id="never-worked-here")
    for path in (f"{stranger.pk}/block/", f"{stranger.pk}/bonus/"):
        assert alice.post(f"{base}{path}", {"reason": "x", "amount": "1"}).status_code == 404
    refused = alice.post(f"{base}notify/", {**note, "workers": [stranger.pk]}, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "workers"
    assert not Event.objects.filter(worker=stranger).exists()
