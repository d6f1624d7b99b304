"""A panel batch from the researcher's side: its page (study link, settings, upload of the
panel's CSV of approved participants, bonus CSV), the same through the commands and the API,
and who may do what."""

import io
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.crowd.panel.services import panel_settings_set
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, Batch, ProjectRole
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.worker_actions import worker_bonus
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.api.test_urls_lists import member
from tests.annotation.crowd.panel.player import PanelDriver

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(paired_run, settings):
    settings.CROWDVL_PUBLIC_URL = "https://study.lab.example.org"
    settings.CROWDVL_PUBLIC_URL_SET = True
    return batch_publish(
        batch=batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="panel",
            items_per_hit=3,
            options={"panel": {"name": "connect", "completion": {"completed": "DONE1"}}},
        )
    )


def answered(client, batch, participant):
    assignment = PanelDriver(client).take(batch, participant)
    answers = {f"q{q.position}": "none" for q in assignment.hit.questions.all()}
    assert client.post(f"/panel/task/{assignment.pk}/", answers).status_code == 302
    return assignment


def test_the_page_shows_the_link_and_saves_settings(admin_client, batch):
    page = admin_client.get(f"/panel/batches/{batch.pk}/").content.decode()
    link = f"https://study.lab.example.org/panel/{batch.pk}/?participantId="
    assert f'id="study-link">{link}<' in page and 'value="DONE1"' in page
    response = admin_client.post(
        f"/panel/batches/{batch.pk}/settings/",
        {
            "id_param": "pid",
            "completed": "NEW-CODE",
            "screened_out": "",
            "no_work": "",
            "completion_url": "",
        },
    )
    assert response.status_code == 302
    batch.refresh_from_db()
    assert batch.options["panel"]["id_param"] == "pid"
    assert batch.options["panel"]["completion"]["completed"] == "NEW-CODE"
    bad = admin_client.post(
        f"/panel/batches/{batch.pk}/settings/",
        {"completion_url": "javascript:alert(1)"},
        follow=True,
    )
    assert "only http:// and https://" in bad.content.decode()
    batch.refresh_from_db()
    assert batch.options["panel"]["completion_url"] == ""
    # The launch page's batch is the same; the CLI prints how to use it.
    out = io.StringIO()
    call_command("panel_settings", batch.pk, "--no-work-code", "NW1", stdout=out)
    assert f"/panel/{batch.pk}/?pid=" in out.getvalue() and "no work left: NW1" in out.getvalue()


def test_uploading_the_panels_csv_confirms_and_reports(client, admin_client, batch):
    p1, p2 = answered(client, batch, "P1"), answered(client, batch, "P2")
    bad = SimpleUploadedFile("approved.csv", b"participant_id\nP1\nP2;x\n", "text/csv")
    response = admin_client.post(f"/panel/batches/{batch.pk}/confirm/", {"file": bad})
    assert response.status_code == 400
    assert "approved.csv, line 3, field &#x27;participant_id&#x27;" in response.content.decode()
    assert not Assignment.objects.filter(confirmed=True).exists()  # nothing half-written
    good = SimpleUploadedFile("approved.csv", b"participant_id\nP1\nGHOST\n", "text/csv")
    page = admin_client.post(f"/panel/batches/{batch.pk}/confirm/", {"file": good})
    html = page.content.decode()
    assert page.status_code == 200
    assert "1 task(s) of 1 participant(s) confirmed now" in html and "GHOST" in html
    p1.refresh_from_db()
    p2.refresh_from_db()
    assert p1.confirmed and not p2.confirmed


def test_the_command_confirms_and_names_a_bad_line(client, batch, tmp_path):
    answered(client, batch, "P1")
    bad = tmp_path / "connect.csv"
    bad.write_bytes(b"ParticipantId,Status\nP1,Approved\n,Approved\n")
    with pytest.raises(CommandError, match=r"connect.csv, line 3, field 'ParticipantId'"):
        call_command("panel_confirm", batch.pk, str(bad))
    good = tmp_path / "ok.csv"
    good.write_bytes(b"ParticipantId,Status\nP1,Approved\nP7,Approved\n")
    out = io.StringIO()
    call_command("panel_confirm", batch.pk, str(good), stdout=out)
    assert "1 assignment(s) of 1 participant(s) confirmed" in out.getvalue()
    assert "1 id(s) with no submitted work in this batch: P7" in out.getvalue()
    with pytest.raises(CommandError, match="nothing.csv"):
        call_command("panel_confirm", batch.pk, str(tmp_path / "nothing.csv"))


def test_the_api_reads_settings_confirms_and_refuses_a_bad_file(
    client,
    batch,
    django_user_model,
    schema,  # noqa: F811
):
    alice = member(django_user_model, batch.run, "alice", ProjectRole.RESEARCHER)
    vic = member(django_user_model, batch.run, "vic", ProjectRole.VIEWER)
    answered(client, batch, "P1")
    base = f"/api/batches/{batch.pk}/panel/"
    response = vic.get(base)
    assert response.status_code == 200
    check(schema, "/api/batches/{batch_id}/panel/", "get", response)
    body = response.json()
    assert body["study_link"].endswith(f"/panel/{batch.pk}/?participantId=")
    assert body["figures"]["waiting"] == 1 and body["name"] == "connect"
    assert vic.post(base, {"id_param": "x"}, format="json").status_code == 403
    response = alice.post(base, {"completion": {"screened_out": "SO1"}}, format="json")
    assert response.status_code == 200, response.json()
    check(schema, "/api/batches/{batch_id}/panel/", "post", response)
    assert response.json()["completion"] == {
        "completed": "DONE1",
        "screened_out": "SO1",
        "no_work": "",
    }
    bad = alice.post(base, {"completion_url": "ftp://x.org/"}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "panel.completion_url"

    confirm = f"{base}confirm/"
    wrong = alice.post(confirm, {"csv": "participant_id\nP 1\n", "name": "c.csv"}, format="json")
    assert wrong.status_code == 400
    check(schema, "/api/batches/{batch_id}/panel/confirm/", "post", wrong)
    assert (wrong.json()["file"], wrong.json()["record"], wrong.json()["field"]) == (
        "c.csv",
        2,
        "participant_id",
    )
    upload = SimpleUploadedFile("approved.csv", b"id\nP1\n", "text/csv")
    assert vic.post(confirm, {"file": upload}).status_code == 403
    upload.seek(0)
    response = alice.post(confirm, {"file": upload})
    assert response.status_code == 200, response.json()
    check(schema, "/api/batches/{batch_id}/panel/confirm/", "post", response)
    assert response.json()["confirmed"] == 1 and response.json()["not_found"] == []


def test_bonuses_come_out_as_csv_for_the_panel(
    client, admin_client, batch, django_user_model, tmp_path
):
    p1 = answered(client, batch, "P1")
    call_command("panel_confirm", batch.pk, str(_file(tmp_path, b"P1\n")), stdout=io.StringIO())
    p1.refresh_from_db()
    worker_bonus(assignment=p1, amount="0.50", reason="Careful work")
    worker_bonus(assignment=p1, amount="0.5", reason="Careful work")  # the same bonus
    worker_bonus(assignment=p1, amount=Decimal("1.25"), reason="=HYPERLINK(1)")
    expected = "participant_id,amount,reason\nP1,0.50,Careful work\nP1,1.25,'=HYPERLINK(1)\n"  # the panel's own id (no panel name), a formula kept as text
    page = admin_client.get(f"/panel/batches/{batch.pk}/bonuses.csv")
    assert page["Content-Type"].startswith("text/csv") and page.content.decode() == expected
    out = tmp_path / "bonuses.csv"
    call_command("panel_bonuses", batch.pk, "--output", str(out), stdout=io.StringIO())
    assert out.read_text() == expected
    alice = member(django_user_model, batch.run, "alice", ProjectRole.RESEARCHER)
    rita = member(django_user_model, batch.run, "rita", ProjectRole.REVIEWER)
    response = alice.get(f"/api/batches/{batch.pk}/panel/bonuses.csv")
    assert response.status_code == 200 and response.content.decode() == expected
    assert rita.get(f"/api/batches/{batch.pk}/panel/bonuses.csv").status_code == 403


def _file(tmp_path, data):
    path = tmp_path / "approved.csv"
    path.write_bytes(data)
    return path


def test_who_may_do_what_on_the_page(client, batch, django_user_model):
    from annotation.models import ProjectMembership

    user = django_user_model.objects.create_user("vic", password="pw")
    ProjectMembership.objects.create(user=user, project=batch.run.project, role=ProjectRole.VIEWER)
    client.force_login(user)
    page = client.get(f"/panel/batches/{batch.pk}/").content.decode()
    assert "study-link" in page and "confirm-form" not in page and "bonuses-csv" not in page
    upload = SimpleUploadedFile("approved.csv", b"id\nP1\n", "text/csv")
    assert client.post(f"/panel/batches/{batch.pk}/confirm/", {"file": upload}).status_code == 403
    assert client.get(f"/panel/batches/{batch.pk}/bonuses.csv").status_code == 403
    panel_settings_set(batch=batch, changes={"id_param": "pid"})
    assert client.post(f"/panel/batches/{batch.pk}/settings/", {"id_param": "x"}).status_code == 403
    # Not a panel batch: no such page.
    other = Batch.objects.create(run=batch.run, stage=batch.stage, provider="local", title="x")
    assert client.get(f"/panel/batches/{other.pk}/").status_code == 404


def test_the_launch_page_shows_what_to_set_up_at_the_panel(paired_run, admin_client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://study.lab.example.org"
    settings.CROWDVL_PUBLIC_URL_SET = True
    form = {
        "stage": BisonStage.SELECTION,
        "provider": "panel",
        "reward": "0.60",
        "lifetime_hours": 24,
        "assignment_minutes": 30,
    }
    assert admin_client.post(f"/runs/{paired_run.pk}/batches/new/", form).status_code == 302
    batch = Batch.objects.get()
    code = batch.options["panel"]["completion"]["completed"]
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    notes = page.split('id="provider-notes"')[1].split("</table>")[0]
    assert f"https://study.lab.example.org/panel/{batch.pk}/?participantId=" in notes
    assert f"completed: {code}" in notes and f'href="/panel/batches/{batch.pk}/"' in notes
    admin_client.post(f"/batches/{batch.pk}/publish/")
    batch.refresh_from_db()
    assert batch.status == "published"
    # Other providers add nothing.
    local = Batch.objects.create(run=paired_run, stage=batch.stage, provider="local", title="x")
    assert 'id="provider-notes"' not in admin_client.get(f"/batches/{local.pk}/").content.decode()


def test_create_batch_prints_the_link_and_the_steps(paired_run, settings):
    settings.CROWDVL_PUBLIC_URL = "https://study.lab.example.org"
    out = io.StringIO()
    call_command(
        "create_batch", paired_run.pk, "--stage", "selection", "--provider", "panel", stdout=out
    )
    batch = Batch.objects.get()
    text = out.getvalue()
    assert (
        f"workers start at https://study.lab.example.org/panel/{batch.pk}/?participantId=" in text
    )
    assert f"manage.py panel_confirm {batch.pk} approved.csv" in text
    assert batch.options["panel"]["completion"]["completed"] in text


def test_the_page_shows_the_first_hundred_ids_a_long_list_did_not_find(admin_client, batch):
    ids = [f"C{i:04d}" for i in range(150)]
    upload = SimpleUploadedFile("approved.csv", ("id\n" + "\n".join(ids)).encode(), "text/csv")
    html = admin_client.post(f"/panel/batches/{batch.pk}/confirm/", {"file": upload}).content
    found = html.decode().split('id="report-not-found">')[1].split("</li>")[0]
    assert found.startswith("150 id(s)") and "C0099" in found and "C0100" not in found
    assert found.endswith(" …")


def test_the_api_refuses_an_unknown_outcome_naming_it(batch, django_user_model):
    """Issue 47: an unknown outcome in `completion` was dropped without a word."""
    alice = member(django_user_model, batch.run, "alice", ProjectRole.RESEARCHER)
    base = f"/api/batches/{batch.pk}/panel/"
    body = {"completion": {"completed": "NEW1", "finished": "X"}}
    response = alice.post(base, body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["field"] == "completion.finished"
    assert "unknown outcome" in response.json()["error"]
    batch.refresh_from_db()
    assert batch.options["panel"]["completion"]["completed"] == "DONE1"  # nothing changed


def big_list(megabytes):
    """A list of approved ids just over `megabytes` MB."""
    line = b"P1," + b"x" * 60 + b"\n"  # a note column: far fewer lines than the most read
    return b"participant_id,note\n" + line * (megabytes * 1024 * 1024 // len(line) + 1)


def test_a_list_over_the_upload_limit_is_refused_naming_the_file(
    client, admin_client, batch, django_user_model, settings
):
    """Issue 47: the panel's list ignored CROWDVL_MAX_UPLOAD_MB (its own 5 MB only)."""
    settings.CROWDVL_MAX_UPLOAD_MB = 1
    answered(client, batch, "P1")
    data = big_list(1)
    upload = SimpleUploadedFile("huge.csv", data, "text/csv")
    page = admin_client.post(f"/panel/batches/{batch.pk}/confirm/", {"file": upload})
    assert page.status_code == 400
    assert "huge.csv" in page.content.decode() and "CROWDVL_MAX_UPLOAD_MB" in page.content.decode()
    alice = member(django_user_model, batch.run, "alice", ProjectRole.RESEARCHER)
    confirm = f"/api/batches/{batch.pk}/panel/confirm/"
    upload = SimpleUploadedFile("huge.csv", data, "text/csv")
    response = alice.post(confirm, {"file": upload})
    assert response.status_code == 400, response.json()
    assert (response.json()["file"], response.json()["field"]) == ("huge.csv", "file")
    body = {"csv": data.decode(), "name": "pasted.csv"}
    response = alice.post(confirm, body, format="json")
    assert response.status_code == 400, response.json()
    assert (response.json()["file"], response.json()["field"]) == ("pasted.csv", "csv")
    # A body far over the limit is refused before it is parsed.
    body = {"csv": big_list(3).decode(), "name": "pasted.csv"}
    response = alice.post(confirm, body, format="json")
    assert response.status_code == 400 and response.json()["field"] == "file"
    assert not Assignment.objects.filter(confirmed=True).exists()
    # Under the limit, the same list is read.
    settings.CROWDVL_MAX_UPLOAD_MB = 2
    upload = SimpleUploadedFile("huge.csv", data, "text/csv")
    response = alice.post(confirm, {"file": upload})
    assert response.status_code == 200 and response.json()["confirmed"] == 1, response.json()


def test_the_bonus_command_names_an_output_it_cannot_write(batch, tmp_path):
    """Issue 47: an unwritable --output printed a traceback."""
    folder = tmp_path / "out"
    folder.mkdir()
    for target in (folder / "missing" / "bonuses.csv", folder):
        with pytest.raises(CommandError, match=r"--output .*cannot write there"):
            call_command("panel_bonuses", batch.pk, "--output", str(target), stdout=io.StringIO())
    assert list(folder.iterdir()) == []  # nothing half-written, no temporary file left
