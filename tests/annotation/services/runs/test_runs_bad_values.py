"""Bad run settings and names are refused at the boundary with a clear error naming the field,
and write nothing (issue 8, part 5)."""

import pytest

from annotation.flows.eccv.services.runs import eccv_run_create
from annotation.models import Run
from annotation.services.runs.runs import run_create
from pipeline.errors import InputError

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("verifiers", ["abc", 0, -1, 2.5, True, 11])
def test_run_settings_are_checked_for_cli_api_and_services(dataset, admin_client, verifiers):
    before = Run.objects.count()
    with pytest.raises(InputError) as info:
        run_create(dataset=dataset, config={"verifiers": verifiers})
    assert info.value.field == "verifiers"
    response = admin_client.post(
        "/api/runs/",
        {"dataset": dataset.pk, "config": {"verifiers": verifiers}},
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["field"] == "verifiers"
    assert Run.objects.count() == before


def test_a_run_stored_with_a_bad_setting_answers_clearly_not_500(dataset, admin_client):
    run = run_create(dataset=dataset)
    Run.objects.filter(pk=run.pk).update(config={"verifiers": "abc"})  # stored before checks
    response = admin_client.get(f"/api/runs/{run.pk}/summary/")
    assert response.status_code == 409 and "verifiers" in response.json()["error"]
    assert admin_client.get("/").status_code == 200


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"image_queries": "abc"}, "image_queries"),
        ({"k": 0}, "k"),
        ({"models": -1}, "models"),
        ({"seed": 2**70}, "seed"),
        ({"cxc_threshold": "high"}, "cxc_threshold"),
    ],
)
def test_eccv_run_settings_are_checked(dataset, config, field):
    with pytest.raises(InputError) as info:
        eccv_run_create(dataset=dataset, config=config)
    assert info.value.field == field
    assert not Run.objects.exists()


def test_run_names_have_a_length_limit(dataset):
    with pytest.raises(InputError) as info:
        run_create(dataset=dataset, name="x" * 201)
    assert info.value.field == "name"
