"""An adaptive run's expected cost before launch: the batch page and the API's draft show the
judgments and cost over all rounds (fixed minimum, expected from the simulation, maximum) and
where the expectation comes from; the page stays fast."""

import time
from decimal import Decimal

import pytest
from django.core.cache import cache

from annotation.flows.cxc.services.sampling import cxc_run_create
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.models import Batch, Question
from pipeline.adaptive_cost import expected_ratings
from pipeline.redundancy_scales import RatingRedundancy
from tests.annotation.flows.cxc.test_cxc_flow import SMALL, sampled

pytestmark = pytest.mark.django_db

ADAPTIVE = {"start": 2, "cap": 6, "half_width": 0.5}


@pytest.fixture
def adaptive_run(dataset, run_on_commit):
    run = cxc_run_create(dataset=dataset, config={**SMALL, "adaptive": ADAPTIVE})
    sampled(run, run_on_commit)
    return run


def draft(client, run, provider="local"):
    form = {
        "stage": CxcStage.STS,
        "provider": provider,
        "reward": "0.50",
        "items_per_hit": 5,
        "lifetime_hours": 24,
        "assignment_minutes": 30,
    }
    response = client.post(f"/runs/{run.pk}/batches/new/", form)
    assert response.status_code == 302, response.content.decode()[-1500:]
    return Batch.objects.order_by("-pk").first()


def test_the_launch_page_shows_minimum_expected_and_maximum(adaptive_run, admin_client):
    cache.clear()
    batch = draft(admin_client, adaptive_run, provider="mturk")
    assert batch.assignments_per_hit == ADAPTIVE["start"]
    began = time.perf_counter()
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    assert time.perf_counter() - began < 0.5  # the draft's creation computed it
    items = (
        Question.objects.filter(hit__batch=batch)
        .exclude(item__kind__startswith="gold")
        .values("item")
        .distinct()
        .count()
    )
    assert items > 0
    expected = expected_ratings(RatingRedundancy(**ADAPTIVE), (0, 1, 2, 3, 4, 5), latent="cxc")
    assert f"minimum {items * 2} judgments" in page and f"maximum {items * 6} judgments" in page
    assert f"expected {round(items * expected.per_item, 1)} judgments" in page
    assert "realistic population" in page and 'id="adaptive-source"' in page
    # Priced at the batch's own cost per judgment, MTurk's fees included.
    from annotation.providers import provider_for

    total = provider_for("mturk").cost_estimate(batch=batch).total
    assert f"${total.quantize(Decimal('0.01'))}" in page.split('id="adaptive-minimum"')[1][:80]


def test_the_api_draft_carries_the_expected_cost(adaptive_run, admin_client):
    response = admin_client.post(
        f"/api/runs/{adaptive_run.pk}/batches/",
        {"stage": CxcStage.STS, "provider": "local", "reward": "0.50", "publish": False},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    found = response.json()["adaptive_cost"]
    judgments = found["judgments"]
    assert judgments["minimum"] == 2 * found["items"] and judgments["maximum"] == 6 * found["items"]
    assert judgments["minimum"] <= judgments["expected_low"] <= judgments["expected"]
    assert judgments["expected"] <= judgments["expected_high"] <= judgments["maximum"]
    assert Decimal(found["cost"]["minimum"]) < Decimal(found["cost"]["expected"])
    assert "realistic population" in found["source"]
    listed = admin_client.get(f"/api/batches/{response.json()['id']}/").json()
    assert listed["adaptive_cost"] == found  # the draft's detail says the same


def test_a_run_without_the_setting_shows_none(dataset, run_on_commit, admin_client):
    run = cxc_run_create(dataset=dataset, config=SMALL)
    sampled(run, run_on_commit)
    batch = draft(admin_client, run)
    assert batch.assignments_per_hit == 5  # CxC's five ratings per pair
    assert 'id="adaptive-cost"' not in admin_client.get(f"/batches/{batch.pk}/").content.decode()
    response = admin_client.post(
        f"/api/runs/{run.pk}/batches/",
        {"stage": CxcStage.SIS, "provider": "local", "reward": "0.50", "publish": False},
        content_type="application/json",
    )
    assert response.json()["adaptive_cost"] is None


def test_an_eccv_adaptive_draft_carries_its_expected_cost_too(proposed, admin_client):
    from annotation.flows.eccv.vocabulary import EccvStage

    proposed.config = {**proposed.config, "adaptive": {"start": 1, "cap": 3, "confidence": 0.98}}
    proposed.save(update_fields=["config"])
    response = admin_client.post(
        f"/api/runs/{proposed.pk}/batches/",
        {"stage": EccvStage.JUDGMENT, "provider": "local", "publish": False},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    found = response.json()["adaptive_cost"]
    judgments = found["judgments"]
    assert judgments["minimum"] == found["items"] and judgments["maximum"] == 3 * found["items"]
    assert judgments["minimum"] < judgments["expected"] < judgments["maximum"]
    page = admin_client.get(f"/batches/{response.json()['id']}/").content.decode()
    assert 'id="adaptive-cost"' in page and "candidate pairs" in page


def test_create_batch_prints_the_expected_cost(adaptive_run):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command(
        "create_batch",
        str(adaptive_run.pk),
        "--stage",
        "cxc-sts",
        "--provider",
        "local",
        "--reward",
        "0.50",
        "--no-publish",
        stdout=out,
    )
    line = next(x for x in out.getvalue().splitlines() if x.startswith("adaptive redundancy"))
    items = int(line.split(", ")[1].split()[0])
    assert f"minimum {2 * items} judgments" in line and f"maximum {6 * items}" in line
    assert "realistic population" in line
