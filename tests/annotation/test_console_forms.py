"""The datasets list and the new-run form (built from each flow's defaults, checked by the
same `run_create` as the CLI and the API)."""

import pytest

from annotation.models import Caption, Run, RunKind
from annotation.services.runs import run_check_config

pytestmark = pytest.mark.django_db


def test_datasets_page_counts_images_and_captions(dataset, admin_client, client):
    assert client.get("/datasets/").status_code == 302  # staff only
    page = admin_client.get("/datasets/").content.decode()
    assert dataset.name in page
    images, captions = dataset.images.count(), Caption.objects.filter(dataset=dataset).count()
    assert images and captions
    assert f'<td class="images">{images}</td>' in page
    assert f'<td class="captions">{captions}</td>' in page


@pytest.mark.parametrize("kind", RunKind.values)
def test_every_flow_has_a_form_with_its_defaults(kind, admin_client):
    page = admin_client.get(f"/runs/new/{kind}/").content.decode()
    for key in run_check_config(kind=kind, config={}):
        assert f'name="config_{key}"' in page


def test_a_run_is_created_from_the_form(dataset, admin_client):
    assert f"/runs/new/{RunKind.BISON}/" in admin_client.get("/runs/new/").content.decode()
    response = admin_client.post(
        "/runs/new/bison/",
        {"dataset": dataset.pk, "name": "browser run", "config_verifiers": 3, "config_seed": 7},
    )
    assert response.status_code == 302
    run = Run.objects.get(name="browser run")
    assert run.kind == RunKind.BISON
    assert run.config == {"verifiers": 3, "seed": 7, "hold_fast_seconds_per_item": 0.0}


def test_a_bad_setting_is_refused_next_to_its_field_and_nothing_is_created(dataset, admin_client):
    response = admin_client.post(
        "/runs/new/bison/", {"dataset": dataset.pk, "config_verifiers": 0, "config_seed": 0}
    )
    assert response.status_code == 400
    form = response.context["form"]
    assert form.errors["config_verifiers"] and not Run.objects.exists()
    response = admin_client.post("/runs/new/bison/", {"dataset": "", "config_verifiers": 2})
    assert response.status_code == 400 and "dataset" in response.context["form"].errors
    assert admin_client.get("/runs/new/nonsense/").status_code == 404
    assert not Run.objects.exists()


@pytest.mark.parametrize("kind", RunKind.values)
def test_the_form_sent_as_shown_creates_a_run_with_the_flows_defaults(kind, dataset, admin_client):
    import html
    import re

    page = admin_client.get(f"/runs/new/{kind}/").content.decode()
    data = {"dataset": dataset.pk, "name": f"{kind} defaults"}
    for name, value in re.findall(r'<input[^>]*name="(config_\w+)"[^>]*value="([^"]*)"', page):
        data[name] = html.unescape(value)
    for name, value in re.findall(
        r'<textarea[^>]*name="(config_\w+)"[^>]*>([^<]*)</textarea>', page
    ):
        data[name] = html.unescape(value.strip())
    response = admin_client.post(f"/runs/new/{kind}/", data)
    assert response.status_code == 302, response.context["form"].errors
    run = Run.objects.get(name=f"{kind} defaults")
    defaults = run_check_config(kind=kind, config={})
    assert {k: run.config[k] for k in defaults} == defaults  # ECCV adds its query sample
