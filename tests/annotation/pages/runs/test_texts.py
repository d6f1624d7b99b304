"""A run's instructions and consent text (annotation/pages/runs/texts.py, issue 28): the texts
page, what a worker is shown and asked again, the defaults offered to edit; console, API and
CLI."""

import io
import json
import re

import pytest
from django.core.management import call_command

from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Event, Invitation, ProjectRole
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.run_texts import run_consent_set, run_instructions_set
from annotation.services.work.claim import assignment_claim_next
from pipeline.errors import InputError
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.api.test_urls_lists import member
from tests.annotation.pages.batches.test_views_running import local_batch
from tests.factories import join

pytestmark = pytest.mark.django_db


# Instructions and consent


def test_an_edited_consent_asks_an_invited_worker_again(paired_run, client):
    batch = local_batch(paired_run)
    worker = join(client, paired_run, "wanda")
    assert client.get(f"/work/{batch.pk}/next/").status_code == 302
    run_consent_set(run=paired_run, text="A new information text that workers must accept.")
    assert Event.objects.filter(run=paired_run, action="run.consent_changed").count() == 1
    again = client.get(f"/work/{batch.pk}/next/")
    invitation = Invitation.objects.get(run=paired_run, worker=worker)
    assert again.status_code == 302 and again["Location"] == f"/join/{invitation.token}/"
    page = client.get(f"/join/{invitation.token}/").content.decode()
    assert "A new information text that workers must accept." in page
    with pytest.raises(InputError):
        run_consent_set(run=paired_run, text="too short")
    run_consent_set(run=paired_run, text="")  # back to the default: a version again
    assert "consent" not in paired_run.config


def test_instructions_replace_the_papers_on_the_workers_page_and_the_manifest(paired_run, client):
    batch = local_batch(paired_run)
    worker = join(client, paired_run, "wanda")
    claim = assignment_claim_next(batch=batch, worker=worker)
    page = client.get(f"/work/assignment/{claim.pk}/").content.decode()
    assert "Discriminative captions" in page and 'id="run-instructions"' not in page
    run_instructions_set(
        run=paired_run, stage=BisonStage.SELECTION, text="Pick the caption <b>only</b> fits."
    )
    page = client.get(f"/work/assignment/{claim.pk}/").content.decode()
    assert 'id="run-instructions"' in page and "Discriminative captions" not in page
    assert "&lt;b&gt;only&lt;/b&gt;" in page  # text, never markup
    with pytest.raises(InputError):
        run_instructions_set(run=paired_run, stage=EccvStage.JUDGMENT, text="x")
    from annotation.selectors.work.run_texts import instructions_record

    record = instructions_record(paired_run)
    assert record[BisonStage.SELECTION]["own_text"] is True
    assert record[BisonStage.VERIFICATION] == {"version": "default", "own_text": False}


def test_the_page_before_consent_shows_the_runs_instructions(paired_run, client):
    batch = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="panel")
    )
    run_instructions_set(run=paired_run, stage=BisonStage.SELECTION, text="Read twice.")
    client.get(f"/panel/{batch.pk}/", {"participantId": "p1"})
    page = client.get(f"/panel/{batch.pk}/").content.decode()
    assert 'id="run-instructions"' in page and "Read twice." in page


def test_texts_page_previews_and_saves(paired_run, admin_client):
    local_batch(paired_run)
    url = f"/runs/{paired_run.pk}/texts/"
    page = admin_client.get(url).content.decode()
    assert 'id="consent-version"' in page and "(the default text)" in page
    preview = admin_client.post(
        url, {"what": BisonStage.SELECTION, "text": "Look twice.", "do": "preview"}
    ).content.decode()
    assert "srcdoc=" in preview and "Look twice." in preview
    paired_run.refresh_from_db()
    assert "instructions" not in paired_run.config  # a preview saves nothing
    consent = admin_client.post(
        url, {"what": "consent", "text": "Preview of a consent text here.", "do": "preview"}
    ).content.decode()
    assert 'id="consent-preview"' in consent
    admin_client.post(
        url, {"what": "consent", "text": "Saved consent text, long enough.", "do": "save"}
    )
    paired_run.refresh_from_db()
    assert paired_run.config["consent"] == "Saved consent text, long enough."
    bad = admin_client.post(url, {"what": "consent", "text": "short", "do": "save"})
    assert bad.status_code == 400


def _textarea(page: str, after: str) -> str:
    """The text of the first textarea after `after` in the page."""
    import html
    import re

    found = re.search(r"<textarea[^>]*>(.*?)</textarea>", page[page.index(after) :], re.S)
    assert found, after
    return html.unescape(found.group(1))


@pytest.mark.parametrize("stage", [BisonStage.SELECTION, BisonStage.VERIFICATION])
def test_texts_page_offers_the_defaults_to_edit_and_an_unchanged_save_is_no_change(
    stage, paired_run, admin_client
):
    """The boxes hold the default consent text and the stage's own instructions (as text),
    not placeholders; saved as shown (a browser's line ends) they stay the default: no own
    text, no new version, no event."""
    from annotation.selectors.work.invitations import DEFAULT_CONSENT, consent_version

    url = f"/runs/{paired_run.pk}/texts/"
    page = admin_client.get(url).content.decode()
    consent = _textarea(page, 'id="consent-section"')
    assert consent.strip() == DEFAULT_CONSENT and "placeholder" not in page
    instructions = _textarea(page, f'id="instructions-{stage}"')
    assert "2. Image dimensions. Variations in object size" in instructions
    version = consent_version(paired_run.config)
    for what, text in (("consent", consent), (stage, instructions)):
        response = admin_client.post(
            url, {"what": what, "text": text.replace("\n", "\r\n"), "do": "save"}
        )
        assert response.status_code == 302
    paired_run.refresh_from_db()
    assert "consent" not in paired_run.config and "instructions" not in paired_run.config
    assert consent_version(paired_run.config) == version
    assert not Event.objects.filter(
        run=paired_run, action__in=["run.consent_changed", "run.instructions_changed"]
    ).exists()
    # A run with its own text goes back to the default when the default is saved over it.
    run_consent_set(run=paired_run, text="Our own information text for this study.")
    admin_client.post(url, {"what": "consent", "text": DEFAULT_CONSENT, "do": "save"})
    paired_run.refresh_from_db()
    assert "consent" not in paired_run.config


def test_texts_in_the_api_and_the_cli(paired_run, django_user_model, schema, tmp_path):  # noqa: F811
    alice = member(django_user_model, paired_run, "alice", ProjectRole.RESEARCHER)
    url = f"/api/runs/{paired_run.pk}/texts/"
    response = alice.get(url)
    check(schema, "/api/runs/{run_id}/texts/", "get", response)
    before = response.json()["consent"]["version"]
    response = alice.post(
        url,
        {"consent": "An API consent text, long enough.", "instructions": {"bison_selection": "Hi"}},
        format="json",
    )
    check(schema, "/api/runs/{run_id}/texts/", "post", response)
    body = response.json()
    assert body["consent"]["version"] != before and body["consent"]["own_text"]
    stage = next(i for i in body["instructions"] if i["stage"] == "bison_selection")
    assert stage["text"] == "Hi" and stage["version"] != "default"
    viewer = member(django_user_model, paired_run, "vera", ProjectRole.VIEWER)
    assert viewer.post(url, {"consent": ""}, format="json").status_code == 403
    version = body["consent"]["version"]
    refused = alice.post(
        url,
        {"consent": "Another consent text, long enough.", "instructions": {"no_such": "x"}},
        format="json",
    )
    assert refused.status_code == 400 and "error" in refused.json()
    assert alice.get(url).json()["consent"]["version"] == version  # nothing half-written
    text = tmp_path / "consent.txt"
    text.write_text("A consent text from a file, long enough.")
    out = io.StringIO()
    call_command("run_texts", str(paired_run.pk), "--consent", str(text), stdout=out)
    assert json.loads(out.getvalue())["consent"]["text"] == text.read_text()


def _every_stage() -> list[str]:
    from annotation.flow_registry import stage_names

    return sorted(stage_names())


@pytest.mark.parametrize("stage", _every_stage())
def test_every_stages_own_instructions_read_as_text(stage, paired_run):
    """What the texts page offers to edit: words, lists one item a line, a rating scale's
    points written out, a HIT's size as the stage's default; never markup."""
    from annotation.selectors.work.run_texts import instructions_default
    from annotation.tasktypes import task_type_for

    text = instructions_default(paired_run, stage)
    assert len(text) > 40 and "<" not in text and "{" not in text and "  " not in text
    counted = re.search(r" all (\d+) ", text)  # "selected for all 10 image pairs"
    assert counted is None or int(counted.group(1)) == task_type_for(stage).default_items_per_hit
