"""Bad values are refused at the boundary with a clear error naming the field, and write
nothing (issue 8, part 5). The COCO-import cases are in test_datasets.py."""

import json
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.services.runs import eccv_run_create
from annotation.models import Batch, Run
from annotation.services.runs.batches import batch_create
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


@pytest.mark.parametrize("reward", ["1000000", "1000000.00", "0", "-1", "0.005", "abc", "NaN"])
def test_rewards_outside_the_columns_and_mturks_limits_are_refused(
    paired_run, admin_client, reward
):
    with pytest.raises(InputError) as info:
        batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local", reward=reward)
    assert info.value.field == "reward"
    response = admin_client.post(
        f"/api/runs/{paired_run.pk}/batches/",
        {"stage": BisonStage.SELECTION, "reward": reward},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert not Batch.objects.exists()
    batch = batch_create(
        run=paired_run, stage=BisonStage.SELECTION, provider="local", reward="999999.99"
    )
    assert batch.reward == Decimal("999999.99")


def test_batch_sizes_have_limits(paired_run):
    with pytest.raises(InputError) as info:
        batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=10**6
        )
    assert info.value.field == "items_per_hit"


def test_json_nested_5000_deep_is_a_400(admin_client, dataset):
    body = "[" * 5000 + "]" * 5000
    response = admin_client.post("/api/runs/", body, content_type="application/json")
    assert response.status_code == 400 and "nested too deeply" in response.json()["detail"]


@pytest.mark.parametrize(
    ("run_id", "message"),
    [
        ("99999", "no run 99999"),
        (str(2**63), "argument run: must be a whole number"),  # beyond the id column
        (str(2**70), "argument run: must be a whole number"),
    ],
)
def test_unknown_ids_on_the_cli_are_a_clear_error(run_id, message):
    with pytest.raises(CommandError, match=message):
        call_command("bison_export", run_id)


def test_huge_ids_in_urls_are_404(admin_client):
    assert admin_client.get(f"/api/jobs/{2**70}/").status_code == 404


def test_bad_ks_are_a_clear_error():
    with pytest.raises(CommandError, match="--ks"):
        call_command("eccv_evaluate", "1", "--rankings", "x.json", "--ks", "abc")


def test_bison_evaluate_given_an_export_folder_names_it(tmp_path):
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps([]))
    with pytest.raises(CommandError, match="is a folder") as info:
        call_command("bison_evaluate", annotations=str(tmp_path), predictions=str(predictions))
    assert str(tmp_path) in str(info.value)


@pytest.mark.parametrize(
    ("option", "value", "field"),
    [
        ("lifetime", 5, "lifetime_seconds"),
        ("lifetime", 40_000_000, "lifetime_seconds"),
        ("duration", 0, "assignment_duration_seconds"),
        ("approval_delay", -5, "auto_approval_delay_seconds"),
        ("approval_delay", 3_000_000, "auto_approval_delay_seconds"),
        ("first_claim_seconds", 10, "options.first_claim_seconds"),
    ],
)
def test_batch_times_are_checked_on_every_path(paired_run, admin_client, option, value, field):
    # The command line names the option as it was typed (issue 47); the API names the field.
    with pytest.raises(CommandError, match=f"argument --{option.replace('_', '-')}"):
        call_command(
            "create_batch",
            str(paired_run.pk),
            "--stage",
            "selection",
            f"--{option.replace('_', '-')}",
            str(value),
        )
    key = {
        "lifetime": "lifetime_seconds",
        "duration": "assignment_duration_seconds",
        "approval_delay": "auto_approval_delay_seconds",
    }.get(option, option)
    response = admin_client.post(
        f"/api/runs/{paired_run.pk}/batches/",
        {"stage": BisonStage.SELECTION, key: value},
        content_type="application/json",
    )
    assert response.status_code == 400 and field in json.dumps(response.json())
    assert not Batch.objects.exists()


def test_a_valid_approval_delay_is_stored_at_creation(paired_run):
    call_command(
        "create_batch", str(paired_run.pk), "--stage", "selection", "--approval-delay", "86400"
    )
    assert Batch.objects.get().auto_approval_delay_seconds == 86400


def _form_data(instance, **changes):
    from django.forms.models import model_to_dict

    data = {k: v for k, v in model_to_dict(instance).items() if v is not None}
    for key in ("config", "options", "qualifications"):
        if key in data:
            data[key] = json.dumps(data[key])
    return {**data, **changes}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"reward": "1000000"}, "reward"),
        ({"lifetime_seconds": "5"}, "lifetime_seconds"),
        ({"reward": "0"}, "reward"),
        ({"auto_approval_delay_seconds": "9999999"}, "auto_approval_delay_seconds"),
        ({"options": json.dumps({"first_claim_seconds": 1})}, "options"),
    ],
)
def test_the_admin_checks_batch_settings_like_the_cli(paired_run, admin_client, changes, field):
    from annotation.admin import BatchForm

    batch = batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    form = BatchForm(instance=batch, data=_form_data(batch, **changes))
    assert not form.is_valid() and field in form.errors
    assert admin_client.get(f"/admin/annotation/batch/{batch.pk}/change/").status_code == 200
    assert admin_client.get("/admin/annotation/batch/").status_code == 200


@pytest.mark.parametrize(
    "config", [{"verifiers": "abc"}, {"verifiers": 0}, {"consent": "short"}, ["not", "a", "dict"]]
)
def test_the_admin_checks_run_settings_like_the_cli(paired_run, config):
    from annotation.admin import RunForm

    form = RunForm(instance=paired_run, data=_form_data(paired_run, config=json.dumps(config)))
    assert not form.is_valid() and "config" in form.errors
    good = RunForm(
        instance=paired_run, data=_form_data(paired_run, config=json.dumps({"verifiers": 3}))
    )
    assert good.is_valid(), good.errors
    assert good.cleaned_data["config"] == {
        "verifiers": 3,
        "seed": 0,
        "hold_fast_seconds_per_item": 0.0,
    }


@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"])
def test_nul_and_lone_surrogates_never_reach_the_database(dataset, admin_client, bad):
    from annotation.crowd.local.invitations import invitations_create
    from annotation.flows.eccv.services.annotators import eccv_annotator_add

    with pytest.raises(InputError) as info:
        run_create(dataset=dataset, name=bad)
    assert info.value.field == "name"
    with pytest.raises(InputError) as info:
        run_create(dataset=dataset, config={"note": bad})
    assert info.value.field == "config.note"
    run = run_create(dataset=dataset)
    with pytest.raises(InputError) as info:
        eccv_annotator_add(run=run, name=bad, kind="fasttext")
    assert info.value.field == "name"
    with pytest.raises(InputError) as info:
        invitations_create(run=run, labels=[bad])
    assert info.value.field == "labels"
    response = admin_client.post(
        "/api/runs/",
        json.dumps({"dataset": dataset.name, "name": bad}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert Run.objects.count() == 1
