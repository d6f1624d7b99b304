"""`manage.py simulate_workers` (annotation/crowd/simulated/management/commands/): it answers a
simulated batch, and says plainly when a batch belongs to another provider (issue 46: it said
"No Batch has that id")."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment
from annotation.services.runs.batches import batch_create, batch_publish

pytestmark = pytest.mark.django_db


def test_a_batch_of_another_provider_is_named_as_such(paired_run):
    local = batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    with pytest.raises(CommandError, match="uses the 'local' provider"):
        call_command("simulate_workers", str(local.pk))
    with pytest.raises(CommandError, match="no batch 999999"):
        call_command("simulate_workers", "999999")


def test_a_simulated_batch_is_answered(paired_run):
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="simulated", items_per_hit=3
        )
    )
    out = io.StringIO()
    call_command("simulate_workers", str(batch.pk), "--workers", "3", stdout=out)
    assert "workers submitted" in out.getvalue()
    assert Assignment.objects.filter(hit__batch=batch).exists()
