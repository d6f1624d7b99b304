"""Consent recorded for every provider (issue 45): a Prolific participant's, a panel
participant's and an invited worker's acceptance of the run's information text is a `Consent`
row (worker, run, version, time), written once per version by `services/work/consent.py`; the
manifest and the datasheet count the people who accepted per provider from those rows and
name the crowds the run used."""

import importlib
from pathlib import Path

import pytest
from django.apps import apps
from django.utils import timezone

from annotation.crowd.panel.models import Participant
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Consent, Event, Invitation
from annotation.selectors.work.invitations import consent_summary, run_consent
from annotation.services.release.datasheet import datasheet_write
from annotation.services.release.export_jobs import export_manifest_crowd
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.consent import consent_record
from annotation.services.work.worker_identity import worker_get_or_create
from tests.annotation.crowd.panel.player import PanelDriver
from tests.factories import invited

pytestmark = pytest.mark.django_db


def prolific_batch(pro, run):
    return pro.publish(
        batch_create(
            run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=2, limit=2
        )
    )


def panel_batch(run):
    return batch_publish(
        batch=batch_create(
            run=run, stage=BisonStage.SELECTION, provider="panel", items_per_hit=2, limit=2
        )
    )


def test_a_prolific_participants_consent_is_recorded_with_version_and_time(pro, paired_run):
    batch = prolific_batch(pro, paired_run)
    before = timezone.now()
    assignment = pro.take(batch, "ann")
    assert assignment is not None
    [row] = Consent.objects.filter(run=paired_run)
    assert row.worker == assignment.worker and row.worker.provider == "prolific"
    assert row.version == run_consent(paired_run)["version"]
    assert before <= row.accepted_at <= timezone.now()
    assert Event.objects.filter(action="consent.recorded", worker=row.worker).count() == 1
    assert assignment.consent_version == row.version  # the text its work is done under


def test_a_prolific_participant_who_declines_is_not_recorded(pro, paired_run):
    batch = prolific_batch(pro, paired_run)
    pro.arrive(batch, "bob")
    browser = pro.browsers[pro.pid("bob")]
    response = browser.post(f"/prolific/study/{batch.pk}/", {"decline": "1"})
    assert response.status_code == 302 and "cc=" in response["Location"]
    assert not Consent.objects.exists()


def test_a_panel_participants_consent_is_recorded_with_version_and_time(client, paired_run):
    batch = panel_batch(paired_run)
    before = timezone.now()
    assignment = PanelDriver(client).take(batch, "PX7Q2")
    assert assignment is not None
    [row] = Consent.objects.filter(run=paired_run)
    assert row.worker == assignment.worker and row.worker.provider == "panel"
    assert row.version == run_consent(paired_run)["version"]
    assert before <= row.accepted_at <= timezone.now()
    # The panel's own row, which lets the participant in, is kept as before.
    assert Participant.objects.get(run=paired_run, worker=row.worker).consent_version == row.version
    assert assignment.consent_version == row.version  # the text its work is done under


def test_an_invited_workers_consent_is_recorded_beside_the_invitation(paired_run):
    invitation = invited(paired_run, "alice")
    [row] = Consent.objects.filter(run=paired_run)
    assert row.worker == invitation.worker and row.version == invitation.consent_version
    assert row.accepted_at is not None and invitation.consented_at is not None


def test_recording_twice_stores_one_row_and_keeps_the_first_time(paired_run):
    worker = worker_get_or_create(provider="prolific", external_id="a" * 24)
    version = run_consent(paired_run)["version"]
    first = consent_record(worker=worker, run=paired_run, version=version)
    again = consent_record(worker=worker, run=paired_run, version=version)
    assert again.pk == first.pk and again.accepted_at == first.accepted_at
    assert Consent.objects.count() == 1
    assert Event.objects.filter(action="consent.recorded").count() == 1
    # A new text is a new version: its own row; the old one stays as the record.
    consent_record(worker=worker, run=paired_run, version="0" * 12)
    assert sorted(Consent.objects.values_list("version", flat=True)) == sorted([version, "0" * 12])


def test_a_panel_participant_consenting_twice_is_one_row(client, paired_run):
    batch = panel_batch(paired_run)
    driver = PanelDriver(client)
    driver.take(batch, "PX7Q2")  # recorded as work starts
    version = run_consent(paired_run)["version"]
    assert client.post(f"/panel/{batch.pk}/", {"version": version}).status_code == 302
    client.get(f"/panel/{batch.pk}/next/")
    assert Consent.objects.filter(run=paired_run).count() == 1


def test_the_datasheet_counts_prolific_and_panel_participants_and_names_the_providers(
    pro, client, paired_run, tmp_path
):
    prolific = prolific_batch(pro, paired_run)
    panel = panel_batch(paired_run)
    assert pro.take(prolific, "ann") is not None
    driver = PanelDriver(client)
    for participant in ("PX7Q2", "PZ9K4"):
        driver.take(panel, participant)  # consent is recorded as work starts
    manifest = export_manifest_crowd(run=paired_run)
    version = run_consent(paired_run)["version"]
    assert manifest["consent"]["accepted_by_version"] == {version: 3}
    assert manifest["consent"]["accepted_by_provider"] == {"panel": 2, "prolific": 1}
    assert manifest["consent"]["invited"] == 0

    datasheet_write(folder=tmp_path, run=paired_run, manifest=manifest, flow="BISON")
    sheet = (Path(tmp_path) / "DATASHEET.md").read_text()
    assert f"per text version: {version} 3; per provider: panel 2, prolific 1." in sheet
    # Nobody has submitted yet: no crowd contributed an answer, and the datasheet says so
    # rather than naming the published batches' crowds (issue 50: what the rows say).
    assert "No counted answer yet: no crowd contributed to this export." in sheet
    assert "recruited through" not in sheet
    assert "local invited workers or MTurk" not in sheet


def test_the_manifest_counts_a_person_once_per_provider(paired_run):
    worker = worker_get_or_create(provider="prolific", external_id="b" * 24)
    for version in ("1" * 12, "2" * 12):  # the text changed and they accepted both
        consent_record(worker=worker, run=paired_run, version=version)
    summary = consent_summary(paired_run)
    assert summary["accepted_by_version"] == {"1" * 12: 1, "2" * 12: 1}
    assert summary["accepted_by_provider"] == {"prolific": 1}


def test_consents_given_before_the_table_existed_are_carried_over(client, paired_run):
    """The migrations copy invitations' and panel participants' accepted versions."""
    invitation = invited(paired_run, "alice")
    PanelDriver(client).take(panel_batch(paired_run), "PX7Q2")
    participant = Participant.objects.get(run=paired_run)
    Consent.objects.all().delete()  # as before the table existed
    core = importlib.import_module("annotation.migrations.0028_consent_records")
    panel = importlib.import_module("annotation.crowd.panel.migrations.0002_consent_records")
    for _ in range(2):  # running them again adds nothing
        core.invited_consents(apps, None)
        panel.participant_consents(apps, None)
    rows = {(c.worker_id, c.version, c.accepted_at) for c in Consent.objects.filter(run=paired_run)}
    invitation = Invitation.objects.get(pk=invitation.pk)
    assert rows == {
        (invitation.worker_id, invitation.consent_version, invitation.consented_at),
        (participant.worker_id, participant.consent_version, participant.consented_at),
    }
