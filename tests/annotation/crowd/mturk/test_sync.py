"""Synchronising with MTurk (annotation/crowd/mturk/sync.py): answers that reached MTurk only
are ingested and the HITs reconciled."""

from datetime import UTC, datetime

import pytest
from botocore.stub import ANY

from annotation.crowd.mturk.sync import mturk_sync_batch
from annotation.models import Assignment, AssignmentState, Event, Hit, HitStatus, Worker
from pipeline.mturk_xml import answer_xml
from tests.annotation.crowd.mturk.test_publish import published_batch

pytestmark = pytest.mark.django_db


def remote_assignment(hit, worker, assignment_id, status, answers):
    now = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    return {
        "AssignmentId": assignment_id,
        "WorkerId": worker,
        "HITId": hit.provider_hit_id,
        "AssignmentStatus": status,
        "AcceptTime": now,
        "SubmitTime": now.replace(minute=3),
        "Answer": answer_xml(answers),
    }


def test_sync_ingests_answers_that_reached_mturk_only_and_reconciles(mt, draft):
    batch = published_batch(mt, draft)
    hits = list(batch.hits.order_by("position"))
    local = mt.take(batch, "LOCALW")  # on hits[0]
    mt.submit(local, {f"q{q.position}": "none" for q in local.hit.questions.all()})
    none2 = {"q0": "none", "q1": "none"}
    page1 = {
        "Assignments": [
            remote_assignment(hits[0], "LOCALW", local.provider_assignment_id, "Approved", none2)
        ],
        "NumResults": 1,
        "NextToken": "page2",
    }
    mt.expect(
        "ListAssignmentsForHIT",
        page1,
        {"HITId": hits[0].provider_hit_id, "MaxResults": 100, "AssignmentStatuses": ANY},
    )
    mt.expect(
        "ListAssignmentsForHIT",
        {"Assignments": [], "NumResults": 0},
        {
            "HITId": hits[0].provider_hit_id,
            "MaxResults": 100,
            "AssignmentStatuses": ANY,
            "NextToken": "page2",
        },
    )
    lost = remote_assignment(
        hits[1], "REMOTEW", "REMOTEASSIGNMENT1".ljust(30, "X"), "Submitted", none2
    )
    bad = remote_assignment(
        hits[1], "BADW", "BADASSIGNMENT1".ljust(30, "X"), "Submitted", {**none2, "q9": "none"}
    )
    mt.expect(
        "ListAssignmentsForHIT",
        {"Assignments": [lost, bad], "NumResults": 2},
        {"HITId": hits[1].provider_hit_id, "MaxResults": 100, "AssignmentStatuses": ANY},
    )
    mt.expect_error(
        "ListAssignmentsForHIT", "RequestError", f"Hit {hits[2].provider_hit_id} does not exist."
    )
    mt.expect(
        "AssociateQualificationWithWorker",
        {},
        {
            "QualificationTypeId": ANY,
            "WorkerId": "REMOTEW",
            "IntegerValue": 1,
            "SendNotification": False,
        },
    )

    report = mturk_sync_batch(batch=batch)
    assert report.ingested == 1 and report.unknown_hits == [hits[2].provider_hit_id]
    assert len(report.errors) == 1 and "q9" in report.errors[0]
    local.refresh_from_db()
    assert local.state == AssignmentState.APPROVED  # approved at MTurk, now here too
    ingested = Assignment.objects.get(provider_assignment_id=lost["AssignmentId"])
    assert ingested.state == AssignmentState.SUBMITTED and ingested.answers.count() == 2
    assert (ingested.submitted_at - ingested.accepted_at).total_seconds() == 180
    # Refused answers write nothing (no worker, assignment or pool row) and are listed once.
    assert not Assignment.objects.filter(provider_assignment_id=bad["AssignmentId"]).exists()
    assert not Worker.objects.filter(external_id="BADW").exists()
    refused = Event.objects.get(action="mturk.answers_refused")
    assert refused.data["assignment"] == bad["AssignmentId"] and refused.data["worker"] == "BADW"
    assert Hit.objects.get(pk=hits[2].pk).status == HitStatus.UNKNOWN
    assert Event.objects.filter(action="mturk.hit_unknown").count() == 1
