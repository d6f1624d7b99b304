"""What researchers do with a running batch (issue 28), below the browser: pausing it (MTurk
refuses with the reason; a worker is led back to their open task only; a panel's newcomer gets
no code). The preview, texts, live status, data browser and exports page of a running batch are
tested beside their code: pages/batches/test_preview.py, pages/runs/test_texts.py,
selectors/runs/test_batch_live.py, selectors/datasets/test_data_browser.py,
pages/exports/test_views_datasheet.py."""

import pytest

from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, AssignmentState, BatchStatus, Event
from annotation.services.runs.batches import batch_create, batch_pause, batch_publish
from annotation.services.work.claim import assignment_claim_next
from tests.factories import join

pytestmark = pytest.mark.django_db


def local_batch(run, publish=True, **kwargs):
    batch = batch_create(
        run=run, stage=BisonStage.SELECTION, provider="local", items_per_hit=2, **kwargs
    )
    return batch_publish(batch=batch) if publish else batch


def answers_for(assignment):
    return {f"q{q.position}": "none" for q in assignment.hit.questions.all()}


# Pause (MTurk refuses with the reason)


def test_mturk_refuses_a_pause_with_the_reason(paired_run):
    batch = batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="mturk", limit=2)
    type(batch).objects.filter(pk=batch.pk).update(status=BatchStatus.PUBLISHED)
    batch.refresh_from_db()
    with pytest.raises(ServiceError, match="MTurk has no pause.*expire"):
        batch_pause(batch=batch)
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PUBLISHED
    assert not Event.objects.filter(batch=batch, action="batch.paused").exists()


def test_a_paused_batch_leads_a_worker_back_to_their_open_task_only(paired_run, client):
    from django.test import Client

    batch = local_batch(paired_run)
    busy = join(client, paired_run, "busy")
    claim = assignment_claim_next(batch=batch, worker=busy)
    batch_pause(batch=batch)
    response = client.get(f"/work/{batch.pk}/next/")
    assert response.status_code == 302 and response.url == f"/work/assignment/{claim.pk}/"
    late = Client()
    join(late, paired_run, "late")
    refused = late.get(f"/work/{batch.pk}/next/")
    assert refused.status_code == 409 and "paused" in refused.content.decode()
    assert not Assignment.objects.filter(worker__external_id="late").exists()


def test_a_paused_panel_study_gives_a_newcomer_no_code_and_lets_the_open_task_finish(
    paired_run, client
):
    from tests.annotation.crowd.panel.player import PanelDriver

    panel = PanelDriver(client)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="panel", items_per_hit=2
        )
    )
    inside = panel.take(batch, "p-inside")
    batch_pause(batch=batch)
    panel.arrive(batch, "p-new")
    refused = client.get(f"/panel/{batch.pk}/next/")
    assert refused.status_code == 409 and "paused" in refused.content.decode()
    assert not Event.objects.filter(action="panel.finished").exists()
    panel.submit(inside, answers_for(inside))
    inside.refresh_from_db()
    assert inside.state == AssignmentState.SUBMITTED and inside.confirmed
