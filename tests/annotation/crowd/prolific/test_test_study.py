"""Prolific's test study (annotation/crowd/prolific/test_study.py, test_views.py): a draft
batch tried by the workspace's test participants through the real link, consent, Prolific's
session check and completion code, with nothing spent and nothing stored."""

import io
from urllib.parse import parse_qs, urlparse

import pytest
from django.core.management import call_command

from annotation.crowd.prolific import studies
from annotation.crowd.prolific.test_study import (
    prolific_test_participant_create,
    prolific_test_study,
)
from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, BatchStatus, Consent, Worker
from annotation.services.runs.batches import batch_create

pytestmark = pytest.mark.django_db


def draft(run):
    return batch_create(run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=2)


def test_a_test_participant_goes_the_whole_way_and_nothing_is_spent_or_stored(
    pro, paired_run, admin_client
):
    batch = draft(paired_run)
    pid = prolific_test_participant_create(email="tester@lab.example.org", client=pro.client)
    assert len(pid) == 24
    page = admin_client.post(f"/prolific/batches/{batch.pk}/test/")
    assert page.status_code == 200 and b'id="test-study"' in page.content
    admin_client.post(f"/prolific/batches/{batch.pk}/test/")  # again: the same test study
    assert (
        pro.standin.calls.count(("POST", f"studies/{batch.provider_hit_type_id}/test-study")) <= 1
    )
    batch.refresh_from_db()
    tests = [s for s in pro.standin.studies.values() if s.get("is_test")]
    assert len(tests) == 1 and tests[0]["status"] == "ACTIVE"
    draft_study = pro.standin.studies[batch.provider_hit_type_id]
    assert draft_study["status"] == "UNPUBLISHED" and batch.status == BatchStatus.DRAFT
    balance = pro.standin.balance
    # The test participant follows the real link of the test study.
    sid = pro.standin.start(tests[0]["id"], pid)
    ids = {"PROLIFIC_PID": pid, "STUDY_ID": tests[0]["id"], "SESSION_ID": sid}
    arrived = admin_client.get(f"/prolific/study/{batch.pk}/", ids)
    assert arrived.status_code == 200 and b"consent" in arrived.content
    version = arrived.content.split(b'name="version" value="')[1].split(b'"')[0].decode()
    consented = admin_client.post(f"/prolific/study/{batch.pk}/", {"version": version})
    assert consented.status_code == 302
    assert consented["Location"] == f"/prolific/batches/{batch.pk}/test/task/"
    task = admin_client.get(consented["Location"])
    assert task.status_code == 200 and b"nothing you answer is stored" in task.content
    hit = batch.hits.order_by("position", "pk").first()
    answers = {f"q{q.position}": "none" for q in hit.questions.all()}
    done = admin_client.post(consented["Location"], answers)
    assert done.status_code == 302
    code = parse_qs(urlparse(done["Location"]).query)["cc"][0]
    assert code == studies.completion_code(batch, studies.COMPLETED)
    assert pro.standin.complete(sid, code) == "AWAITING REVIEW"
    assert not Worker.objects.filter(provider="prolific").exists()
    assert not Assignment.objects.filter(hit__batch=batch).exists()
    assert not Consent.objects.exists()
    assert pro.standin.balance == balance  # nothing spent


def test_only_the_test_study_reaches_a_draft(pro, paired_run, client):
    batch = draft(paired_run)
    pro.standin.test_participants[pro.standin.participant()] = "t@lab.example.org"
    prolific_test_study(batch=batch, client=pro.client)
    batch.refresh_from_db()
    someone = pro.standin.participant()
    # The draft's own study id (or any other) is refused before anything is asked.
    refused = client.get(
        f"/prolific/study/{batch.pk}/",
        {
            "PROLIFIC_PID": someone,
            "STUDY_ID": batch.provider_hit_type_id,
            "SESSION_ID": pro.standin.new_id(),
        },
    )
    assert refused.status_code == 400
    # The task page needs a verified test session, whoever asks.
    assert client.get(f"/prolific/batches/{batch.pk}/test/task/").status_code in (302, 404)


def test_a_workspace_without_test_studies_is_told_to_pilot(pro, paired_run):
    batch = draft(paired_run)
    pro.standin.test_studies_enabled = False
    with pytest.raises(ServiceError, match="pilot with a small real study"):
        prolific_test_study(batch=batch, client=pro.client)
    out = io.StringIO()
    pro.standin.test_studies_enabled = True
    with pytest.raises(Exception, match="no active test participant"):
        call_command("prolific_test_study", str(batch.pk), stdout=out)
    call_command(
        "prolific_test_study", str(batch.pk), "--participant", "me@lab.example.org", stdout=out
    )
    assert "test study" in out.getvalue()
