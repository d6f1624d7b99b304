"""A running batch's live status (annotation/selectors/runs/batch_live.py, issue 28): counts of
each state with pseudonyms; console, API and CLI."""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, AssignmentState, ProjectRole
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.selectors.runs.batch_live import batch_live_status
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.slots import first_claim_seconds
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.api.test_urls_lists import member
from tests.annotation.pages.batches.test_views_running import answers_for

pytestmark = pytest.mark.django_db


# Live status


def test_live_status_counts_states_with_pseudonyms(paired_run, django_user_model, schema):  # noqa: F811
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=1
        )
    )
    now = timezone.now()
    workers = [worker_get_or_create(provider="local", external_id=f"w{i}") for i in range(4)]
    claims = [assignment_claim_next(batch=batch, worker=w) for w in workers]
    assignment_submit(assignment_id=claims[0].pk, worker=workers[0], answers=answers_for(claims[0]))
    Assignment.objects.filter(pk=claims[1].pk).update(state=AssignmentState.ABANDONED)
    old = now - timedelta(seconds=first_claim_seconds(batch) + 5)  # nothing submitted
    Assignment.objects.filter(pk=claims[2].pk).update(accepted_at=old)
    live = batch_live_status(batch=batch)
    assert live.counts == {
        "working": 1,
        "timed_out": 1,
        "returned": 1,
        "submitted": 1,
        "approved": 0,
        "rejected": 0,
    }
    rows = {r.assignment: r for r in live.rows}
    assert rows[claims[3].pk].worker == worker_pseudonym(provider="local", external_id="w3")
    assert rows[claims[2].pk].elapsed_seconds >= first_claim_seconds(batch)
    assert rows[claims[2].pk].state == "timed_out" and rows[claims[3].pk].state == "working"
    page = member(django_user_model, paired_run, "vera", ProjectRole.VIEWER)
    response = page.get(f"/api/batches/{batch.pk}/status/")
    check(schema, "/api/batches/{batch_id}/status/", "get", response)
    assert response.json()["counts"]["working"] == 1
    assert "w3" not in json.dumps(response.json())  # pseudonyms only
    out = io.StringIO()
    call_command("batch_status", str(batch.pk), stdout=out)
    assert "working 1  timed_out 1  returned 1  submitted 1" in out.getvalue()
