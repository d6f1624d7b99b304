"""Ids, numbers and lists in API bodies: anything out of range is a 400 naming the field,
never a 500 (issue 8, part 5)."""

import json

import pytest

from annotation.models import Batch, Job, Run

pytestmark = pytest.mark.django_db

HUGE = [2**63, 2**70, -(2**63) - 1, "abc", None, 1.5, [], {}]


def post(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("value", HUGE)
def test_ids_in_bodies(admin_client, dataset, value):
    assert post(admin_client, "/api/runs/", {"dataset": value}).status_code == 400
    response = post(admin_client, "/api/eccv/evaluate/", {"export": value, "rankings": {}})
    assert response.status_code == 400, response.content
    response = post(admin_client, "/api/bison/evaluate/", {"export": value, "predictions": []})
    assert response.status_code == 400, response.content
    assert not Run.objects.exists()


@pytest.mark.parametrize("ks", [["abc"], [0], [-1], [2**70], "1,5", [1] * 1000])
def test_ks_in_bodies(admin_client, ks):
    response = post(admin_client, "/api/eccv/evaluate/", {"export": 1, "rankings": {}, "ks": ks})
    assert response.status_code == 400, response.content


@pytest.mark.parametrize(
    "body",
    [
        {"seed": 2**70},
        {"items_per_hit": 2**70},
        {"assignments_per_hit": -1},
        {"lifetime_seconds": 2**63},
        {"reward": "1e400"},
        {"qualifications": {"min_approved_hits": 2**70}},
    ],
)
def test_batch_numbers_in_bodies(admin_client, paired_run, body):
    response = post(
        admin_client, f"/api/runs/{paired_run.pk}/batches/", {"stage": "bison_selection", **body}
    )
    assert response.status_code == 400, response.content
    assert not Batch.objects.exists()


@pytest.mark.parametrize("body", [{"dim": 2**70}, {"seed": 2**70}, {"block_size": 2**70}])
def test_pairing_numbers_in_bodies(admin_client, dataset, body):
    from annotation.services.runs.runs import run_create

    run = run_create(dataset=dataset)
    assert post(admin_client, f"/api/runs/{run.pk}/pairing/", body).status_code == 400
    assert not Job.objects.exists()
