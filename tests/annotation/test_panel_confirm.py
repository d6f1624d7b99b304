"""Confirming panel work from the panel's CSV of approved participants: listed work is
confirmed through `assignment_confirm`, ids without work are reported, a bad file is refused
naming its file, line and field, and nothing is written unless the whole file is good."""

import pytest

from annotation.crowd.panel.approvals import PanelFileError, approved_ids, panel_confirm
from annotation.crowd.panel.testing import PanelDriver
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, AssignmentState, Event, Hit, HitStatus
from annotation.services.batches import batch_create, batch_publish
from pipeline.errors import InputError

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sql_path")]


@pytest.fixture
def batch(paired_run):
    return batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="panel", items_per_hit=3
        )
    )


def answered(client, batch, participant):
    """`participant` takes a task and submits it on the task page (unconfirmed)."""
    assignment = PanelDriver(client).take(batch, participant)
    answers = {f"q{q.position}": "none" for q in assignment.hit.questions.all()}
    assert client.post(f"/panel/task/{assignment.pk}/", answers).status_code == 302
    assignment.refresh_from_db()
    assert assignment.state == AssignmentState.SUBMITTED and not assignment.confirmed
    return assignment


def test_listed_work_is_confirmed_and_unknown_ids_are_reported(client, batch):
    p1, p2 = answered(client, batch, "P1"), answered(client, batch, "P2")
    data = b"participant_id,Status,started\r\nP1,Approved,2026-11-01\r\nNOBODY,approved,\r\n"
    report = panel_confirm(batch=batch, data=data, file="connect-approved.csv")
    assert (report.listed, report.confirmed, report.participants) == (2, 1, 1)
    assert report.not_found == ["NOBODY"] and report.refused == []
    p1.refresh_from_db()
    p2.refresh_from_db()
    assert p1.confirmed and p1.hit.status == HitStatus.COMPLETE  # it counts now
    assert not p2.confirmed and p2.hit.status == HitStatus.OPEN
    event = Event.objects.get(action="assignment.confirmed", assignment=p1)
    assert event.data["source"] == "panel file connect-approved.csv"
    assert "NOBODY" in report.describe()
    again = panel_confirm(batch=batch, data=data, file="connect-approved.csv")
    assert (again.confirmed, again.already) == (0, 1)  # the same file twice changes nothing


def test_rows_the_panel_did_not_approve_are_skipped(client, batch):
    p1 = answered(client, batch, "P1")
    data = b"id,status\nP1,Rejected\n"
    report = panel_confirm(batch=batch, data=data, file="sona.csv")
    assert report.not_approved == ["P1"] and report.confirmed == 0
    p1.refresh_from_db()
    assert not p1.confirmed


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbfparticipantId\nP1\n",  # a BOM; the batch's own id parameter as header
        b"P1\n\nP1\n",  # a bare list, blank lines and a repeated id
        b"PARTICIPANT ID,x\nP1,1\n",
    ],
)
def test_headers_panels_use_and_bare_lists_are_read(data):
    assert approved_ids(data, file="f.csv", id_param="participantId").ids == ["P1"]


@pytest.mark.parametrize(
    ("data", "line", "field", "words"),
    [
        (b"participant_id\nP1\n\nP2 x\n", 4, "participant_id", "is not a participant id"),
        (
            b"participant_id,status\nP1,approved\n,approved\n",
            3,
            "participant_id",
            "no participant id",
        ),
        (b"name,email\nann,a@x.org\n", 1, "header", "no participant id column"),
        (b"participant_id\nP1\n\xff\xfe\n", 3, "(encoding)", "not UTF-8"),
        (b'participant_id\n"P1\nP2\n', 3, "(csv)", "malformed CSV"),
        (b"", 1, "header", "is empty"),
    ],
)
def test_a_bad_file_names_file_line_and_field_and_writes_nothing(
    client, batch, data, line, field, words
):
    p1 = answered(client, batch, "P1")
    events = Event.objects.count()
    with pytest.raises(PanelFileError) as caught:
        panel_confirm(batch=batch, data=data, file="approved.csv")
    error = caught.value
    assert (error.file, error.record, error.field) == ("approved.csv", line, field)
    assert str(error).startswith(f"approved.csv, line {line}, field '{field}': ")
    assert words in str(error)
    p1.refresh_from_db()
    assert not p1.confirmed and Event.objects.count() == events


def test_a_file_too_large_is_refused(batch):
    with pytest.raises(InputError, match="larger than 5 MB"):
        panel_confirm(batch=batch, data=b"P1\n" * 2_000_000, file="big.csv")


def test_the_rules_refuse_work_over_capacity_and_it_is_reported(client, paired_run):
    batch = batch_publish(
        batch=batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="panel",
            items_per_hit=100,
            assignments_per_hit=2,
        )
    )
    p1, p2 = answered(client, batch, "P1"), answered(client, batch, "P2")
    assert p1.hit_id == p2.hit_id
    Hit.objects.filter(pk=p1.hit_id).update(max_assignments=1)  # e.g. a HIT re-offered smaller
    report = panel_confirm(batch=batch, data=b"participant_id\nP1\nP2\n", file="a.csv")
    assert report.confirmed == 1 and len(report.refused) == 1
    assert report.refused[0]["participant"] == "P2" and "counted" in report.refused[0]["reason"]
    assert Assignment.objects.filter(confirmed=True).count() == 1


def test_the_final_list_releases_work_it_does_not_list(client, paired_run):
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="panel", items_per_hit=100
        )
    )
    forged = answered(client, batch, "FORGED1")  # anyone may type an id into the link
    assert PanelDriver(client).take(batch, "P2") is None  # its waiting work holds the HIT
    report = panel_confirm(batch=batch, data=b"participant_id\nP9\n", file="final.csv")
    assert report.released == 0  # not asked for
    report = panel_confirm(
        batch=batch, data=b"participant_id\nP9\n", file="final.csv", release_unlisted=True
    )
    assert report.released == 1 and report.not_found == ["P9"]
    forged.refresh_from_db()
    assert forged.state == AssignmentState.REJECTED and not forged.confirmed
    assert PanelDriver(client).take(batch, "P2").hit_id == forged.hit_id  # free again
