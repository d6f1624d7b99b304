"""Confirming panel work from the panel's CSV of approved participants: listed work is
confirmed through `assignment_confirm`, ids without work are reported, a bad file is refused
naming its file, line and field, and nothing is written unless the whole file is good."""

import pytest

from annotation.crowd.panel.approvals import PanelFileError, approved_ids, panel_confirm
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, AssignmentState, Event, Hit, HitStatus
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.errors import InputError
from tests.annotation.crowd.panel.player import PanelDriver

pytestmark = pytest.mark.django_db


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


# What a careful researcher uploads, as spreadsheets and panels write it.
@pytest.mark.parametrize(
    "data",
    [
        b"participant_id;status\r\nP1;Approved\r\nP2;Rejected\r\n",  # Excel where ',' is decimal
        b"participant_id\tstatus\nP1\tApproved\nP2\tRejected\n",  # tab-separated
        # Excel's "Unicode text": UTF-16 with its BOM, tabs, CRLF.
        "participant_id\tstatus\r\nP1\tApproved\r\nP2\tRejected\r\n".encode("utf-16"),
        b"\xfe\xff" + "participant_id\tstatus\nP1\tApproved\nP2\tRejected\n".encode("utf-16-be"),
        # A BOM, quoted fields (a ';' and a ',' inside quotes are no delimiters), CRLF.
        b'\xef\xbb\xbf"participant_id","note; kept","status"\r\n"P1","a, b","Approved"\r\n'
        b'"P2","","Rejected"\r\n',
        b'"note, kept";participant_id;status\r\nx;P1;approved\r\ny;P2;pending\r\n',
    ],
)
def test_semicolons_tabs_utf16_and_quotes_are_read(data):
    listed = approved_ids(data, file="f.csv", id_param="participantId")
    assert (listed.ids, listed.not_approved) == (["P1"], ["P2"])


def test_the_participant_column_is_taken_over_a_generic_id_column():
    # A row number or a submission "ID" before the participant's id is not their id.
    data = b"ID,Participant ID,Status\n1,P1,Approved\n2,P2,Approved\n"
    assert approved_ids(data, file="f.csv", id_param="participantId").ids == ["P1", "P2"]
    # The batch's own id parameter comes first of all.
    data = b"id,pid\n1,P1\n"
    assert approved_ids(data, file="f.csv", id_param="pid").ids == ["P1"]


def test_any_status_column_decides_and_two_are_refused(client, batch):
    p1 = answered(client, batch, "P1")
    data = b"participant_id,Review Status\nP1,Rejected\n"
    report = panel_confirm(batch=batch, data=data, file="sona.csv")
    assert report.not_approved == ["P1"] and report.confirmed == 0
    p1.refresh_from_db()
    assert not p1.confirmed
    with pytest.raises(PanelFileError) as caught:
        approved_ids(
            b"participant_id,Review Status,Payment status\nP1,Approved,Unpaid\n",
            file="f.csv",
            id_param="participantId",
        )
    assert (caught.value.record, caught.value.field) == (1, "header")
    assert "Review Status, Payment status" in str(caught.value)


def test_an_approved_row_wins_over_another_row_of_the_same_id():
    # A participant who returned the study, then took it again and was approved.
    data = b"participant_id,status\nP1,Returned\nP1,Approved\nP2,Timed Out\n"
    listed = approved_ids(data, file="f.csv", id_param="participantId")
    assert (listed.ids, listed.not_approved) == (["P1"], ["P2"])


def test_ids_are_case_sensitive_so_another_spelling_confirms_nothing(client, batch):
    p1 = answered(client, batch, "Px7Q")
    report = panel_confirm(batch=batch, data=b"participant_id\npx7q\nPX7Q\n", file="a.csv")
    assert report.confirmed == 0 and report.not_found == ["px7q", "PX7Q"]
    p1.refresh_from_db()
    assert not p1.confirmed


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("\u0420X7Q2", "U+0420 CYRILLIC CAPITAL LETTER ER"),  # looks like "PX7Q2"
        ("PX7\u200bQ2", "character 4 is U+200B ZERO WIDTH SPACE"),
        ("=HYPERLINK(1)", "it starts with U+003D EQUALS SIGN"),
        ("P" * 65, "it has 65 characters, at most 64"),
    ],
)
def test_a_bad_id_is_named_by_its_character(batch, value, words):
    data = f"participant_id\nP1\n{value}\n".encode()
    with pytest.raises(PanelFileError) as caught:
        panel_confirm(batch=batch, data=data, file="approved.csv")
    assert (caught.value.record, caught.value.field) == (3, "participant_id")
    assert words in str(caught.value)
    assert value not in str(caught.value) or value.isascii()  # shown escaped, not disguised


@pytest.mark.parametrize(
    ("data", "line", "words"),
    [
        ("participant_id,name\nP1,Jos\u00e9\n".encode("cp1252"), 2, "0xE9"),
        (b"\xff\xfep\x00\n\x00\x00\xd8", 2, "UTF-16"),  # a BOM, then a broken surrogate
        ("participant_id\nP1\n".encode("utf-16-le"), 1, "NUL"),  # UTF-16 without its BOM
    ],
)
def test_another_encoding_is_refused_naming_file_and_line(batch, data, line, words):
    with pytest.raises(PanelFileError) as caught:
        panel_confirm(batch=batch, data=data, file="excel.csv")
    assert (caught.value.file, caught.value.record) == ("excel.csv", line)
    assert words in str(caught.value) and "CSV UTF-8" in str(caught.value)


@pytest.mark.parametrize(
    "data", [b"participant_id\n", b"participant_id,status\nP1,Pending\nP2,Returned\n"]
)
def test_a_final_list_without_an_approved_id_releases_nothing(client, batch, data):
    p1 = answered(client, batch, "P1")
    events = Event.objects.count()
    with pytest.raises(InputError, match="lists no approved participant"):
        panel_confirm(batch=batch, data=data, file="final.csv", release_unlisted=True)
    p1.refresh_from_db()
    assert p1.state == AssignmentState.SUBMITTED and Event.objects.count() == events
    # Not as a final list: nothing to confirm, nothing released.
    report = panel_confirm(batch=batch, data=data, file="final.csv")
    assert (report.listed, report.confirmed, report.released) == (0, 0, 0)


def test_a_list_of_seventy_thousand_ids_is_read_in_one_upload(client, batch):
    # More ids than PostgreSQL binds in one query (65,535) and under MAX_ROWS.
    p1 = answered(client, batch, "P1")
    unknown = [f"C{i:07d}" for i in range(70_000)]
    data = ("participant_id\n" + "\n".join([*unknown, "P1"]) + "\n").encode()
    report = panel_confirm(batch=batch, data=data, file="connect.csv", release_unlisted=True)
    assert (report.listed, report.confirmed, report.released) == (70_001, 1, 0)
    assert len(report.not_found) == 70_000
    p1.refresh_from_db()
    assert p1.confirmed


def test_an_uploads_size_is_checked_before_it_is_read(settings):
    """Issue 47: every cap is enforced before the content is read."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotation.crowd.panel.approvals import upload_read

    class Unread(SimpleUploadedFile):
        def read(self, *args):
            raise AssertionError("read before its size was checked")

    settings.CROWDVL_MAX_UPLOAD_MB = 1
    upload = Unread("big.csv", b"x" * (1024 * 1024 + 1), "text/csv")
    with pytest.raises(InputError) as caught:
        upload_read(upload, file="big.csv")
    assert (caught.value.file, caught.value.field) == ("big.csv", "file")


def test_the_command_checks_a_files_size_before_reading_it(batch, settings, tmp_path):
    """`panel_confirm BATCH FILE` refuses a file over CROWDVL_MAX_UPLOAD_MB by its size, as the
    console and the API do (issue 47), naming the file; nothing is confirmed."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    settings.CROWDVL_MAX_UPLOAD_MB = 1
    big = tmp_path / "approved.csv"
    big.write_bytes(b"participant_id\n" + b"a" * (1024 * 1024 + 10))
    with pytest.raises(CommandError, match=r"approved\.csv.*larger than 1 MB"):
        call_command("panel_confirm", str(batch.pk), str(big))
