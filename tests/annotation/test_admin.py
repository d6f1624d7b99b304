"""The admin checks batch and run settings like the command line (issue 8, part 5)."""

import json

import pytest

from annotation.flows.bison.vocabulary import BisonStage
from annotation.services.runs.batches import batch_create

pytestmark = pytest.mark.django_db


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
