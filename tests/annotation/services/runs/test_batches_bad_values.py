"""Bad batch rewards, sizes and times are refused on every path with a clear error naming the
field, and write nothing (issue 8, part 5)."""

import json
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Batch
from annotation.services.runs.batches import batch_create
from pipeline.errors import InputError

pytestmark = pytest.mark.django_db


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
