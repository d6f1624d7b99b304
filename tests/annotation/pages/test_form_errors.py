"""Refusals on console pages: beside the field that sets what they name (a service's parameter
mapped to the form's own field and units), in the page's words; the command line keeps its
own (its options' names mean nothing on a page)."""

import html
import re

import pytest
from django.core.management import CommandError, call_command

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.cxc.services.sampling import cxc_run_create
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Batch, Review
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.simulate import WorkerProfile
from tests.annotation.flows.cxc.test_cxc_flow import SMALL

pytestmark = pytest.mark.django_db

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z-]+")  # a command-line option, e.g. --allow-low-pay


def _text(response) -> str:
    return html.unescape(response.content.decode())


def test_cxc_sampling_without_embeddings_is_refused_beside_the_file(dataset, admin_client):
    run = cxc_run_create(dataset=dataset, config=SMALL)
    response = admin_client.post(f"/runs/{run.pk}/inputs/sample/", {"path": ""})
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "give image embeddings" in " ".join(errors["file"]) and "__all__" not in errors
    assert not OPTION.search(_text(response))
    with pytest.raises(CommandError, match="--standin-image-embeddings"):
        call_command("cxc_sample", run.pk, "--no-wait")


def test_a_batch_time_out_of_range_is_refused_by_its_own_field(paired_run, admin_client):
    form = {"stage": BisonStage.SELECTION, "provider": "local", "assignment_minutes": 60}
    response = admin_client.post(
        f"/runs/{paired_run.pk}/batches/new/", {**form, "lifetime_hours": 10_000}
    )
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == ["lifetime_hours"] and "8760" in errors["lifetime_hours"][0]
    assert not Batch.objects.exists()


def test_an_export_held_back_by_open_reviews_says_so_in_the_pages_words(
    proposed, admin_client, django_capture_on_commit_callbacks
):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(batch=batch, workers=2, profile=WorkerProfile(accuracy=0.9, gold_accuracy=0.0))
    assert Review.objects.filter(status="open").exists()
    with django_capture_on_commit_callbacks(execute=True):
        started = admin_client.post(f"/runs/{proposed.pk}/exports/new/", follow=True)
    page = _text(started)
    assert "No export started" in page and "in the review queue" in page
    assert not OPTION.search(page)
    with pytest.raises(CommandError, match="--allow-open-reviews"):
        call_command("eccv_export", proposed.pk)


def test_low_pay_on_the_launch_page_names_the_forms_checkbox(paired_run, admin_client, settings):
    from annotation.services.money.spend import ALLOW_LOW_PAY_LABEL

    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"

    response = admin_client.post(
        f"/runs/{paired_run.pk}/batches/new/",
        {
            "stage": BisonStage.SELECTION,
            "provider": "mturk",
            "reward": "0.01",
            "lifetime_hours": 24,
            "assignment_minutes": 30,
        },
    )
    assert response.status_code == 302
    page = _text(admin_client.get(response["Location"]))
    refusal = re.search(r'<div class="error" role="alert" id="refusal">(.*?)</div>', page, re.S)
    assert refusal and "below the minimum hourly rate" in refusal.group(1)
    assert f'"{ALLOW_LOW_PAY_LABEL}" ticked' in refusal.group(1)
    assert not OPTION.search(refusal.group(1))
    with pytest.raises(CommandError, match="--allow-low-pay"):
        call_command("mturk_publish", Batch.objects.get().pk)
