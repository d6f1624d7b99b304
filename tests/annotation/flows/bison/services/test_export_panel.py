"""Panel work in a published dataset: a BISON export whose stage 3 was answered by panel
participants names none of them (pseudonyms only), counts their consent, and its datasheet
does not publish the panel's completion codes."""

import json
from pathlib import Path

import pytest

from annotation.crowd.panel.approvals import panel_confirm
from annotation.flows.bison.selectors import bison_verified_triples
from annotation.flows.bison.services.export import bison_export_start
from annotation.flows.bison.vocabulary import BisonItemKind, BisonStage
from annotation.models import Export, Item
from annotation.selectors.work.invitations import run_consent
from annotation.services.runs.batches import batch_create, batch_publish
from tests.annotation.crowd.panel.player import PanelDriver
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db

PARTICIPANTS = ("PNLx7Q2secret", "PNLz9K4secret")


def test_a_bison_export_names_no_panel_participant(client, paired_run, run_on_commit):
    selection_done_factory(paired_run, workers=2, accuracy=1.0)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run,
            stage=BisonStage.VERIFICATION,
            provider="panel",
            items_per_hit=100,
            options={"panel": {"name": "connect", "completion": {"completed": "CODE4242"}}},
        )
    )
    driver = PanelDriver(client)
    # Nobody takes two stage-3 HITs showing one image (the toy run's triples fill more than
    # one HIT): two participants per HIT.
    participants = [f"{p}{n}" for n in range(batch.hits.count()) for p in PARTICIPANTS]
    for participant in participants:
        assignment = driver.take(batch, participant)
        answers = {
            f"q{q.position}": "right" if q.swapped else "left"
            for q in assignment.hit.questions.all()
        }
        assert client.post(f"/panel/task/{assignment.pk}/", answers).status_code == 302
    assert not bison_verified_triples(run=paired_run).exists()  # nothing counts unconfirmed
    listed = "participant_id\n" + "\n".join(participants) + "\n"
    report = panel_confirm(batch=batch, data=listed.encode(), file="connect.csv")
    assert report.confirmed == len(participants)
    triples = Item.objects.filter(run=paired_run, kind=BisonItemKind.TRIPLE).count()
    assert bison_verified_triples(run=paired_run).count() == triples > 0

    job = run_on_commit(bison_export_start, run=paired_run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    folder = Path(Export.objects.get(run=paired_run).path).parent
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert {"manifest.json", "DATASHEET.md"} <= set(files) and len(files) >= 3
    for name, raw in files.items():
        text = raw.decode()
        for participant in participants:
            assert participant not in text, f"{participant} in {name}"
        assert "CODE4242" not in text, f"the completion code in {name}"
    manifest = json.loads(files["manifest.json"])
    version = run_consent(paired_run)["version"]
    assert manifest["consent"]["accepted_by_version"] == {version: len(participants)}
    assert manifest["stage3"]["workers"] == len(participants)
    # The datasheet documents the panel batch's settings, the codes only as set.
    sheet = files["DATASHEET.md"].decode()
    assert "id_param participantId" in sheet and "completed (set)" in sheet
