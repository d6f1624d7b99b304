"""Pause and resume a batch: no new claims while paused, work in progress may finish; through
the platform's own pause where it has one (Prolific's study PAUSE/START); the console, the API
and the kill switch."""

import pytest

from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import AssignmentDraft, AssignmentState, BatchStatus, Event, ProjectRole
from annotation.services.runs.batches import (
    batch_create,
    batch_pause,
    batch_publish,
    batch_resume,
    batches_stop,
)
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.drafts import draft_save
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.api.test_urls_lists import member
from tests.annotation.crowd.prolific.player import ProlificDriver

pytestmark = pytest.mark.django_db


def local_batch(run):
    return batch_publish(
        batch=batch_create(
            run=run, stage=BisonStage.SELECTION, provider="local", items_per_hit=2, limit=4
        )
    )


def test_a_paused_batch_takes_no_claim_but_work_in_progress_finishes(paired_run):
    batch = local_batch(paired_run)
    busy = worker_get_or_create(provider="local", external_id="busy")
    held = assignment_claim_next(batch=batch, worker=busy)
    batch_pause(batch=batch)
    batch_pause(batch=batch)  # again: nothing more
    assert Event.objects.filter(batch=batch, action="batch.paused").count() == 1
    late = worker_get_or_create(provider="local", external_id="late")
    assert assignment_claim_next(batch=batch, worker=late) is None
    answers = {f"q{q.position}": "none" for q in held.hit.questions.all()}
    # Its answers in progress are kept while paused (issue 46), and go with its submit.
    draft_save(assignment_id=held.pk, worker_id=busy.pk, answers={"q0": ["none"]})
    assert assignment_claim_next(batch=batch, worker=busy) == held
    assignment_submit(assignment_id=held.pk, worker=busy, answers=answers)
    held.refresh_from_db()
    assert held.state == AssignmentState.SUBMITTED
    assert not AssignmentDraft.objects.filter(assignment=held).exists()
    batch_resume(batch=batch)
    assert assignment_claim_next(batch=batch, worker=late) is not None
    draft = batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local", limit=1)
    with pytest.raises(ServiceError, match="not paused"):
        batch_resume(batch=draft)
    with pytest.raises(ServiceError, match="only a published batch"):
        batch_pause(batch=draft)


def test_prolific_pauses_and_starts_its_study(client, settings, paired_run):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    pro = ProlificDriver(client)
    try:
        batch = pro.publish(
            batch_create(
                run=paired_run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=2
            )
        )
        inside = pro.take(batch, "inside")
        study = pro.standin.studies[batch.provider_hit_type_id]
        batch_pause(batch=batch)
        assert study["status"] == "PAUSED"
        assert pro.take(batch, "outside") is None  # Prolific sends nobody to a paused study
        pro.submit(inside, {f"q{q.position}": "none" for q in inside.hit.questions.all()})
        inside.refresh_from_db()
        assert inside.state == AssignmentState.SUBMITTED and inside.confirmed
        batch_resume(batch=batch)
        assert study["status"] == "ACTIVE"
        batch_pause(batch=batch)
        result = batches_stop(run=paired_run, reason="kill switch")
        assert batch.pk in result["stopped"] and study["status"] == "COMPLETED"
    finally:
        pro.done()


def test_pause_and_resume_from_the_console_and_the_api(
    paired_run,
    admin_client,
    schema,  # noqa: F811
    django_user_model,
):
    batch = local_batch(paired_run)
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    assert 'id="pause"' in page
    admin_client.post(f"/batches/{batch.pk}/pause/")
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PAUSED
    assert 'id="resume"' in admin_client.get(f"/batches/{batch.pk}/").content.decode()
    alice = member(django_user_model, paired_run, "alice", ProjectRole.RESEARCHER)
    response = alice.post(f"/api/batches/{batch.pk}/resume/")
    check(schema, "/api/batches/{batch_id}/resume/", "post", response)
    assert response.json()["status"] == BatchStatus.PUBLISHED
    response = alice.post(f"/api/batches/{batch.pk}/pause/")
    check(schema, "/api/batches/{batch_id}/pause/", "post", response)
    assert response.json()["status"] == BatchStatus.PAUSED
    viewer = member(django_user_model, paired_run, "vera", ProjectRole.VIEWER)
    assert viewer.post(f"/api/batches/{batch.pk}/resume/").status_code == 403


def test_the_command_pauses_and_resumes(paired_run):
    import io

    from django.core.management import call_command

    batch = local_batch(paired_run)
    out = io.StringIO()
    call_command("batch_pause", str(batch.pk), stdout=out)
    call_command("batch_pause", str(batch.pk), "--resume", stdout=out)
    assert out.getvalue().split() == [
        "batch",
        f"{batch.pk}:",
        "paused",
        "batch",
        f"{batch.pk}:",
        "published",
    ]


def test_an_invited_worker_is_told_a_paused_batch_is_paused(client, paired_run):
    """Issue 46: the start page said "it has closed, or it needs people who have not taken
    part" of a paused batch; each case now says its own reason."""
    from annotation.services.runs.batches import batch_expire
    from tests.factories import join

    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    batch_pause(batch=batch)
    page = client.get(f"/work/{batch.pk}/").content.decode()
    assert "paused this batch for now" in page and "has closed" not in page
    batch_resume(batch=batch)
    assert 'id="start"' in client.get(f"/work/{batch.pk}/").content.decode()
    batch_expire(batch=batch)
    page = client.get(f"/work/{batch.pk}/").content.decode()
    assert "This batch has closed" in page and "other part" not in page
