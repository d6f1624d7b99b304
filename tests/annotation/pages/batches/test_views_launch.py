"""Launching a batch from the browser: a draft made by the same `batch_create`, its cost and
expected hourly pay shown before publishing, refusals (budget) shown and publishing disabled,
discarding a draft, and the simulated crowd offered only with DEBUG on."""

from decimal import Decimal

import pytest

from annotation.crowd.mturk.fees import estimate_cost
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.vocabulary import EccvItemKind, EccvStage
from annotation.models import Batch, BatchStatus, Item
from annotation.selectors.money.pay import pay_estimate

pytestmark = pytest.mark.django_db


def _new(client, run, **data):
    form = {
        "stage": BisonStage.SELECTION,
        "provider": "local",
        "reward": "0.60",
        "lifetime_hours": 24,
        "assignment_minutes": 30,
        **data,
    }
    return client.post(f"/runs/{run.pk}/batches/new/", form)


def test_estimate_then_publish_a_local_batch(paired_run, admin_client):
    response = _new(admin_client, paired_run, items_per_hit=10)
    assert response.status_code == 302
    batch = Batch.objects.get()
    assert response["Location"] == f"/batches/{batch.pk}/"
    assert batch.status == BatchStatus.DRAFT and batch.reward == Decimal("0.60")
    assert batch.lifetime_seconds == 24 * 3600 and batch.assignment_duration_seconds == 1800
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    hits = batch.hits.count()
    cost = estimate_cost(
        hits=hits, assignments_per_hit=batch.assignments_per_hit, reward=batch.reward
    )
    assert f'<td id="hits">{hits}</td>' in page
    assert f'<td id="rewards">${cost.rewards}</td>' in page and 'id="fees"' not in page
    assert f"${pay_estimate(batch=batch).hourly}/h" in page
    admin_client.post(f"/batches/{batch.pk}/publish/")
    assert Batch.objects.get(pk=batch.pk).status == BatchStatus.PUBLISHED
    assert admin_client.post(f"/batches/{batch.pk}/delete/").status_code == 404


def test_an_mturk_draft_over_budget_shows_the_refusal_and_fees(paired_run, admin_client, settings):
    settings.CROWDVL_BUDGET = "0.50"
    assert _new(admin_client, paired_run, provider="mturk", reward="1.00").status_code == 302
    batch = Batch.objects.get()
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    cost = estimate_cost(
        hits=batch.hits.count(), assignments_per_hit=batch.assignments_per_hit, reward=batch.reward
    )
    assert f'<td id="fees">${cost.fees}</td>' in page and cost.fees > 0
    assert 'id="refusal"' in page and "over the budget of $0.50" in page
    assert '<button type="submit" id="publish" disabled>' in page


def test_discard_returns_the_items_and_bad_input_is_named(paired_run, admin_client):
    _new(admin_client, paired_run)
    batch = Batch.objects.get()
    admin_client.post(f"/batches/{batch.pk}/discard/")
    assert not Batch.objects.exists()
    assert _new(admin_client, paired_run).status_code == 302  # the items can be batched again
    response = _new(admin_client, paired_run, reward="0", min_approval_percent=150)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "reward" in errors and "min_approval_percent" in errors


def test_simulated_crowd_only_with_debug(paired_run, admin_client, settings):
    settings.DEBUG = False
    page = admin_client.get(f"/runs/{paired_run.pk}/batches/new/").content.decode()
    assert 'value="simulated"' not in page
    assert _new(admin_client, paired_run, provider="simulated").status_code == 400
    settings.DEBUG = True
    page = admin_client.get(f"/runs/{paired_run.pk}/batches/new/").content.decode()
    assert 'value="simulated"' in page


def test_a_running_batch_is_extended_grown_and_expired_from_its_page(paired_run, admin_client):
    _new(admin_client, paired_run, items_per_hit=10)
    batch = Batch.objects.get()
    admin_client.post(f"/batches/{batch.pk}/publish/")
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    assert 'id="batch-actions"' in page and 'id="sync"' not in page  # local: nothing to sync
    open_hits = batch.hits.filter(status="open").count()
    admin_client.post(f"/batches/{batch.pk}/add/", {"count": "2"})
    assert sum(batch.hits.values_list("extra_assignments", flat=True)) == 2 * open_hits
    response = admin_client.post(f"/batches/{batch.pk}/add/", {"count": "0"}, follow=True)
    assert "at least 1" in response.content.decode()
    admin_client.post(f"/batches/{batch.pk}/expire/")
    assert Batch.objects.get(pk=batch.pk).status == BatchStatus.EXPIRED
    admin_client.post(f"/batches/{batch.pk}/extend/", {"hours": "5"})
    assert Batch.objects.get(pk=batch.pk).status == BatchStatus.PUBLISHED


def test_an_eccv_batch_takes_its_direction_and_follow_ups_on_the_page(proposed, admin_client):
    page = admin_client.get(f"/runs/{proposed.pk}/batches/new/").content.decode()
    assert 'name="direction"' in page and 'name="follow_ups"' in page
    assert 'name="more_judgments"' in page and "round 1 is image to caption" in page
    assert "ECCV Caption: image-caption judgments" in page  # the stage by its name
    # follow_ups unticked, no reward: the paper's round 2
    round_two = {"stage": EccvStage.JUDGMENT, "direction": "t2i", "reward": ""}
    assert _new(admin_client, proposed, **round_two).status_code == 302
    batch = Batch.objects.get()
    assert batch.options == {"direction": "t2i", "follow_ups": False, "more_judgments": False}
    asked = Item.objects.filter(questions__hit__batch=batch, kind=EccvItemKind.CANDIDATE)
    assert asked.exists() and not asked.exclude(proposals__direction="t2i").exists()
    # The paper's round 2 ($0.65, without rationale questions), raised to the minimum hourly pay.
    assert batch.reward > Decimal("0.65") and not pay_estimate(batch=batch).below_minimum
    # Errors sit next to their field: a direction with nothing left, an unknown one, and
    # follow-up judgments on a run with nothing uncertain.
    for data, field in (
        ({"direction": "t2i"}, "direction"),
        ({"direction": "x2y"}, "direction"),
        ({"more_judgments": "on", "follow_ups": "on"}, "more_judgments"),
    ):
        response = _new(admin_client, proposed, stage=EccvStage.JUDGMENT, **data)
        assert response.status_code == 400
        assert list(response.context["form"].errors) == [field], data


def test_a_bison_batch_offers_no_eccv_options(paired_run, admin_client):
    page = admin_client.get(f"/runs/{paired_run.pk}/batches/new/").content.decode()
    assert 'name="direction"' not in page and 'name="follow_ups"' not in page
    assert "BISON stage 2: caption selection" in page  # stage names readable, not raw values


def test_the_api_takes_the_eccv_options_too(proposed, admin_client):
    response = admin_client.post(
        f"/api/runs/{proposed.pk}/batches/",
        {"stage": EccvStage.JUDGMENT, "provider": "local", "publish": False, "direction": "i2t"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["options"] == {"direction": "i2t", "follow_ups": True}
    response = admin_client.post(
        f"/api/runs/{proposed.pk}/batches/",
        {"stage": EccvStage.JUDGMENT, "provider": "local", "more_judgments": True},
        content_type="application/json",
    )
    assert response.status_code == 400 and "uncertain" in response.json()["error"]


def _as_shown(page: str) -> dict[str, str]:
    """A form's fields as the browser would send them untouched."""
    import html
    import re

    data = {}
    for tag in re.findall(r"<input[^>]*>", page):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        kind = re.search(r'type="([^"]+)"', tag)
        if not name or (kind and kind.group(1) == "checkbox" and "checked" not in tag):
            continue
        checkbox = kind and kind.group(1) == "checkbox"
        data[name.group(1)] = html.unescape(value.group(1)) if value else "on" if checkbox else ""
    for name, options in re.findall(r'<select name="([^"]+)"[^>]*>(.*?)</select>', page, re.S):
        chosen = re.search(r'<option value="([^"]*)"[^>]*selected', options) or re.search(
            r'<option value="([^"]*)"', options
        )
        data[name] = html.unescape(chosen.group(1))
    return data


@pytest.mark.parametrize("stage", [EccvStage.JUDGMENT])
def test_the_batch_form_sent_as_shown_makes_the_stages_default_batch(stage, proposed, admin_client):
    """Each size is pre-filled with the stage's default and sent back untouched it is no
    choice: the batch is the one an empty form makes (the reward raised to the minimum pay)."""
    from annotation.services.runs.batches import batch_create, batch_discard

    page = admin_client.get(f"/runs/{proposed.pk}/batches/new/").content.decode()
    shown = _as_shown(page)
    assert shown["items_per_hit"] == "20" and shown["lifetime_hours"] == "168"
    assert shown["min_approval_percent"] == "97" and shown["locales"] == "US,GB,CA,AU,NZ,IE"
    assert "Default: 168" in page and "Reward per HIT (USD)" in page
    shown.update(stage=stage, provider="local")
    assert admin_client.post(f"/runs/{proposed.pk}/batches/new/", shown).status_code == 302
    made = Batch.objects.get()
    batch_discard(batch=made)
    assert made.options == {"follow_ups": True, "more_judgments": False}  # as before
    blank = batch_create(run=proposed, stage=stage, provider="local", options=made.options)
    fields = ("items_per_hit", "assignments_per_hit", "reward", "lifetime_seconds")
    assert [getattr(made, f) for f in fields] == [getattr(blank, f) for f in fields]
    assert made.qualifications == blank.qualifications
