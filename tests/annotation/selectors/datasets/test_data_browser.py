"""The data browser (annotation/selectors/datasets/data_browser.py, issue 28): a run's items
filtered by stage, gold and held work in statements that do not grow with the rows, a chosen
caption shown by its text; console, API and CLI."""

import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import GOLD_KINDS, ProjectRole, Review
from annotation.selectors.datasets.data_browser import item_rows, run_items
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.simulate import WorkerProfile
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.api.test_urls_lists import member
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


# Data browser


@pytest.fixture
def judged(proposed):
    """An ECCV batch with the paper's gold, each HIT judged by three simulated workers who
    sometimes fail gold (those HITs held for review)."""
    batch = batch_publish(
        batch=batch_create(
            run=proposed,
            stage=EccvStage.JUDGMENT,
            provider="simulated",
            items_per_hit=6,
            assignments_per_hit=3,
        )
    )
    simulate_crowd(batch=batch, workers=3, profile=WorkerProfile(accuracy=0.75, gold_accuracy=0.8))
    return batch


def test_data_browser_filters(judged, admin_client):
    run = judged.run
    stage = EccvStage.JUDGMENT
    everything = list(run_items(run=run, stage=stage))
    gold = list(run_items(run=run, stage=stage, gold="gold"))
    real = list(run_items(run=run, stage=stage, gold="real"))
    assert gold and real and len(gold) + len(real) == len(everything)
    assert all(i.kind in GOLD_KINDS for i in gold)
    held = list(run_items(run=run, stage=stage, held="held"))
    open_reviews = Review.objects.filter(assignment__hit__batch=judged, status="open")
    assert open_reviews.exists() and held
    rows = item_rows(items=held, stage=stage)
    assert {r for row in rows for r in row.reviews} <= set(
        open_reviews.values_list("pk", flat=True)
    )
    assert all(row.reviews for row in rows)
    agree = item_rows(items=list(run_items(run=run, stage=stage, agreement="agree")), stage=stage)
    disagree = item_rows(
        items=list(run_items(run=run, stage=stage, agreement="disagree")), stage=stage
    )
    assert agree and disagree
    assert all(len(set(r.counted_labels)) == 1 < len(r.counted_labels) for r in agree)
    assert all(r.agreement == 1.0 for r in agree)
    assert all(len(set(r.counted_labels)) >= 2 and r.agreement < 1.0 for r in disagree)
    page = admin_client.get(f"/runs/{run.pk}/data/?stage={stage}&held=held").content.decode()
    assert page.count('class="item-row') == min(len(held), 25)
    shown = {r for row in item_rows(items=held[:25], stage=stage) for r in row.reviews}
    assert shown and all(f'href="/review/{r}/"' in page for r in shown)
    real_page = admin_client.get(f"/runs/{run.pk}/data/?stage={stage}&gold=real").content.decode()
    assert f"{len(real)} items" in real_page


def test_data_browser_queries_do_not_grow_with_rows(paired_run, admin_client):
    selection_done_factory(paired_run, workers=2)

    def queries(limit):
        with CaptureQueriesContext(connection) as captured:
            items = list(run_items(run=paired_run, stage=BisonStage.SELECTION)[:limit])
            rows = item_rows(items=items, stage=BisonStage.SELECTION)
            assert len(rows) == limit
            assert all(r.answers for r in rows)
        return len(captured)

    assert queries(1) == queries(5) == 2
    url = f"/runs/{paired_run.pk}/data/?stage={BisonStage.SELECTION}"
    admin_client.get(url)  # warm the session and the user

    def page_queries(per_page, monkeypatch_value):
        from annotation.pages.runs import data as run_data_views

        before = run_data_views.PER_PAGE
        run_data_views.PER_PAGE = monkeypatch_value
        try:
            with CaptureQueriesContext(connection) as captured:
                page = admin_client.get(url).content.decode()
        finally:
            run_data_views.PER_PAGE = before
        assert page.count('class="item-row') == per_page
        return len(captured)

    assert page_queries(1, 1) == page_queries(5, 5)


def test_data_browser_in_the_api_and_the_cli(judged, django_user_model, schema):  # noqa: F811
    run = judged.run
    vera = member(django_user_model, run, "vera", ProjectRole.VIEWER)
    response = vera.get(f"/api/runs/{run.pk}/items/?stage={EccvStage.JUDGMENT}&gold=gold&limit=3")
    check(schema, "/api/runs/{run_id}/items/", "get", response)
    body = response.json()
    assert body["count"] == run_items(run=run, stage=EccvStage.JUDGMENT, gold="gold").count()
    assert len(body["results"]) == 3 and all(r["gold"] for r in body["results"])
    assert vera.get(f"/api/runs/{run.pk}/items/").status_code == 400  # the stage is required
    out = io.StringIO()
    call_command(
        "run_items", str(run.pk), "--stage", EccvStage.JUDGMENT, "--held", "held", stdout=out
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines and all(line["reviews"] for line in lines)


def test_a_chosen_caption_is_shown_by_its_text_never_as_a_number(paired_run):
    """Issue 46: BISON stage 2's caption ids were averaged as ratings ("81234.00")."""
    selection_done_factory(paired_run, workers=2)
    items = list(run_items(run=paired_run, stage=BisonStage.SELECTION))
    rows = item_rows(items=items, stage=BisonStage.SELECTION)
    picked = [r for r in rows if any(a.caption for a in r.answers if a.counted)]
    assert picked
    texts = {a.caption for r in picked for a in r.answers if a.caption}
    for row in picked:
        assert row.aggregate in texts | {"none", "tie"}
        assert not row.aggregate.replace(".", "", 1).isdigit()
