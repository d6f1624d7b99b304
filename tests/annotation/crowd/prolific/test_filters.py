"""Prolific filters by the reference (issue 45): the batch's requirements are resolved in
Prolific's filter list (`GET filters/`, cached), countries sent as choice ids, what the list
lacks refused naming the setting, and the launch page in Prolific's words."""

import pytest

from annotation.crowd.prolific import studies
from annotation.crowd.prolific.client import ProlificError, client_default
from annotation.crowd.prolific.filters import KNOWN, vocabulary, vocabulary_forget
from annotation.crowd.prolific.groups import BLOCKLIST
from annotation.flows.bison.vocabulary import BisonStage
from annotation.services.runs.batches import batch_create
from pipeline.errors import InputError
from tests.annotation.crowd.prolific.player import API

pytestmark = pytest.mark.django_db

COUNTRY = "current-country-of-residence"


def draft(run, **options):
    """A small batch: several fit in one run."""
    return batch_create(
        run=run,
        stage=BisonStage.SELECTION,
        provider="prolific",
        items_per_hit=2,
        limit=4,
        **options,
    )


def listed(pro, filter_id):
    return next(f for f in pro.standin.filter_list if f["filter_id"] == filter_id)


def choice_id(pro, label):
    return next(cid for cid, name in listed(pro, COUNTRY)["choices"].items() if name == label)


def test_countries_go_to_prolific_as_the_choice_ids_of_its_filter_list(pro, paired_run):
    batch = pro.publish(draft(paired_run, qualifications={"locales": ["US", "GB"]}))
    study = pro.standin.studies[batch.provider_hit_type_id]
    sent = {f["filter_id"]: f for f in study["filters"]}
    us, gb = choice_id(pro, "United States"), choice_id(pro, "United Kingdom")
    assert sent[COUNTRY]["selected_values"] == [us, gb]
    assert "United States" not in sent[COUNTRY]["selected_values"]
    # Ranges up to the filters' own maximum; the blocklist's id from the same table.
    assert sent["approval_rate"]["selected_range"] == {"lower": 97, "upper": 100}
    top = listed(pro, "approval_numbers")["max"]
    assert sent["approval_numbers"]["selected_range"] == {"lower": 500, "upper": top}
    assert KNOWN["group_blocklist"].filter_id == BLOCKLIST and BLOCKLIST in sent


def test_a_country_prolific_does_not_list_is_refused_before_anything_is_made(pro, paired_run):
    with pytest.raises(InputError) as refused:
        pro.publish(draft(paired_run, qualifications={"locales": ["US", "JP", "XK"]}))
    assert refused.value.field == "qualifications.locales"
    message = str(refused.value)
    assert "'qualifications.locales'" in message and "Current Country of Residence" in message
    assert "JP (Japan)" in message and "XK (no English name known)" in message
    assert "US" not in message.split(" for ", 1)[1]
    assert not pro.standin.studies and not pro.standin.group_info


def test_a_filter_missing_from_the_list_is_refused_and_a_renamed_id_found_by_title(pro, paired_run):
    country = listed(pro, COUNTRY)
    pro.standin.filter_list.remove(country)
    with pytest.raises(InputError, match="no filter 'current-country-of-residence'") as refused:
        pro.publish(draft(paired_run))
    assert refused.value.field == "qualifications.locales"
    # Prolific gives the filter a new id: the title still finds it, and its id is sent.
    pro.standin.filter_list.append({**country, "filter_id": "country-of-residence-2"})
    vocabulary_forget(API)
    batch = pro.publish(draft(paired_run))
    study = pro.standin.studies[batch.provider_hit_type_id]
    assert "country-of-residence-2" in {f["filter_id"] for f in study["filters"]}


def test_the_filter_list_is_read_once_over_its_pages_and_kept(pro, paired_run, admin_client):
    filler = [
        {"filter_id": f"filler-{n}", "title": f"Filler {n}", "type": "range", "min": 0, "max": 9}
        for n in range(130)
    ]
    pro.standin.filter_list[:0] = filler  # the country filter is on the second page
    first = draft(paired_run, qualifications={"locales": ["IE"]})
    admin_client.get(f"/batches/{first.pk}/")
    pro.publish(first)
    pro.publish(draft(paired_run))
    assert admin_client.get(f"/batches/{first.pk}/").status_code == 200
    assert pro.standin.calls.count(("GET", "filters/")) == 2  # two pages, read once
    assert len(vocabulary(pro.client).filters) == len(pro.standin.filter_list)
    vocabulary_forget(API)
    vocabulary(pro.client)
    assert pro.standin.calls.count(("GET", "filters/")) == 4


def test_the_stand_in_refuses_filters_its_list_does_not_take(pro, paired_run):
    body = studies.study_body(draft(paired_run), client=pro.client, extra_filters=[])
    us = choice_id(pro, "United States")
    bad = {
        "is not a valid filter_id": {"filter_id": "shoe-size", "selected_values": ["0"]},
        "are not valid choices": {"filter_id": COUNTRY, "selected_values": ["United States"]},
        "is a select filter": {"filter_id": COUNTRY, "selected_range": {"lower": 0, "upper": 1}},
        "is a range filter": {"filter_id": "approval_rate", "selected_values": [us]},
        "must lie within": {"filter_id": "approval_rate", "selected_range": {"lower": 101}},
    }
    for why, rule in bad.items():
        with pytest.raises(ProlificError, match=why) as refused:
            pro.client.call("POST", "studies/", json={**body, "filters": [rule]})
        assert refused.value.status == 400
    assert not pro.standin.studies
    good = {"filter_id": COUNTRY, "selected_values": [us]}
    assert pro.client.call("POST", "studies/", json={**body, "filters": [good]})["id"]


def test_the_launch_page_shows_prolifics_titles_and_choice_labels(pro, paired_run, admin_client):
    batch = draft(paired_run, qualifications={"locales": ["US", "GB"]})
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    assert "Current Country of Residence: United States, United Kingdom" in page
    assert "Approval Rate: at least 97" in page and "Approval Numbers: at least 500" in page
    assert "approval_rate" not in page and "could not be read" not in page
    # A country Prolific does not list: the page says publishing will refuse it.
    japan = draft(paired_run, qualifications={"locales": ["JP"]})
    page = admin_client.get(f"/batches/{japan.pk}/").content.decode()
    assert "publishing will be refused" in page and "JP (Japan)" in page


def test_the_launch_page_without_prolifics_list_shows_the_batchs_settings(
    pro, paired_run, admin_client, settings
):
    batch = draft(paired_run, qualifications={"locales": ["US", "GB"]})
    pro.standin.fail("GET", r"filters/", status=503, why="maintenance")
    response = admin_client.get(f"/batches/{batch.pk}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Prolific&#x27;s filter list could not be read" in page and "maintenance" in page
    assert "approval rate: at least 97%" in page and "approved submissions: at least 500" in page
    assert "country of residence: United States (US), United Kingdom (GB)" in page
    # No token configured: the same, never an error page.
    settings.CROWDVL_PROLIFIC_TOKEN = ""
    pro.provider.use_client(client_default)
    response = admin_client.get(f"/batches/{batch.pk}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "could not be read" in page and "CROWDVL_PROLIFIC_TOKEN" in page
    assert "country of residence: United States (US), United Kingdom (GB)" in page
