"""What researchers do with a running batch (issue 28), below the browser: the preview of its
task pages, the run's instructions and consent, live status, the data browser and the exports
page's datasheet and manifest; console, API and CLI alike."""

import io
import json
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.services.export import eccv_export_start
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import (
    GOLD_KINDS,
    Answer,
    Assignment,
    AssignmentState,
    BatchStatus,
    Event,
    Export,
    Invitation,
    ProjectRole,
    Review,
)
from annotation.selectors.datasets.data_browser import item_rows, run_items
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.selectors.runs.batch_live import batch_live_status
from annotation.services.runs.batches import batch_create, batch_pause, batch_publish
from annotation.services.runs.run_texts import run_consent_set, run_instructions_set
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.slots import first_claim_seconds
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from pipeline.errors import InputError
from pipeline.simulate import WorkerProfile
from tests.annotation.test_api_lists import member
from tests.annotation.test_api_schema import check, schema  # noqa: F401
from tests.factories import join, selection_done_factory

pytestmark = pytest.mark.django_db


def local_batch(run, publish=True, **kwargs):
    batch = batch_create(
        run=run, stage=BisonStage.SELECTION, provider="local", items_per_hit=2, **kwargs
    )
    return batch_publish(batch=batch) if publish else batch


def answers_for(assignment):
    return {f"q{q.position}": "none" for q in assignment.hit.questions.all()}


# Preview


def test_preview_shows_every_task_page_of_a_draft_with_its_items_and_stores_nothing(
    paired_run, client, django_user_model
):
    draft = local_batch(paired_run, publish=False)
    hits = list(draft.hits.order_by("position"))
    assert len(hits) >= 2
    viewer = django_user_model.objects.create_user("vera", password="pw")
    paired_run.project.memberships.create(user=viewer, role=ProjectRole.VIEWER)
    client.force_login(viewer)
    first = client.get(f"/batches/{draft.pk}/preview/").content.decode()
    assert 'id="preview-banner"' in first and f"task 1 of {len(hits)}" in first
    assert first.count('class="question"') == hits[0].questions.count()
    # Its images load as the researcher's (no assignment, so no worker page key).
    import re

    images = re.findall(r'<img[^>]* src="([^"]+)"', first)
    assert images and "{page-key}" not in first
    for url in images:
        assert "/img/" not in url, url
        shown = client.get(url)
        assert shown.status_code == 200 and shown["Content-Type"] == "image/jpeg", url
    second = client.get(f"/batches/{draft.pk}/preview/2/").content.decode()
    caption = hits[1].questions.first().item.positive.captions.first().text
    assert caption in second and 'id="preview-previous"' in second
    assert client.get(f"/batches/{draft.pk}/preview/{len(hits) + 1}/").status_code == 404

    refused = client.post(f"/batches/{draft.pk}/preview/", {"q0": "none"})
    assert refused.status_code == 400 and "would be refused" in refused.content.decode()
    answers = {f"q{q.position}": "none" for q in hits[0].questions.all()}
    accepted = client.post(f"/batches/{draft.pk}/preview/", answers, follow=True)
    assert accepted.status_code == 200 and "would be accepted" in accepted.content.decode()
    assert not Answer.objects.exists() and not Assignment.objects.exists()
    draft.refresh_from_db()
    assert draft.status == BatchStatus.DRAFT


def test_preview_only_for_members_who_may_view_the_run(paired_run, client, django_user_model):
    batch = local_batch(paired_run)
    assert client.get(f"/batches/{batch.pk}/preview/").status_code == 302  # sign in first
    django_user_model.objects.create_user("olga", password="pw")
    client.login(username="olga", password="pw")
    assert client.get(f"/batches/{batch.pk}/preview/").status_code in (403, 404)
    batch_page = member(django_user_model, paired_run, "rita", ProjectRole.RESEARCHER)
    assert batch_page.get(f"/api/batches/{batch.pk}/preview/1/").status_code == 200


def test_preview_in_the_api_and_the_cli(paired_run, django_user_model, schema):  # noqa: F811
    batch = local_batch(paired_run, publish=False)
    alice = member(django_user_model, paired_run, "alice", ProjectRole.VIEWER)
    response = alice.get(f"/api/batches/{batch.pk}/preview/1/")
    check(schema, "/api/batches/{batch_id}/preview/{number}/", "get", response)
    body = response.json()
    assert body["total"] == batch.hits.count() and body["url"].endswith("/preview/1/")
    assert len(body["questions"]) == 2 and "gold" not in json.dumps(body)
    out = io.StringIO()
    call_command("batch_preview", str(batch.pk), "--number", "2", stdout=out)
    assert json.loads(out.getvalue())["number"] == 2


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


# Live status


def test_live_status_counts_states_with_pseudonyms(paired_run, django_user_model, schema):  # noqa: F811
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=1
        )
    )
    now = timezone.now()
    workers = [worker_get_or_create(provider="local", external_id=f"w{i}") for i in range(4)]
    claims = [assignment_claim_next(batch=batch, worker=w) for w in workers]
    assignment_submit(assignment_id=claims[0].pk, worker=workers[0], answers=answers_for(claims[0]))
    Assignment.objects.filter(pk=claims[1].pk).update(state=AssignmentState.ABANDONED)
    old = now - timedelta(seconds=first_claim_seconds(batch) + 5)  # nothing submitted
    Assignment.objects.filter(pk=claims[2].pk).update(accepted_at=old)
    live = batch_live_status(batch=batch)
    assert live.counts == {
        "working": 1,
        "timed_out": 1,
        "returned": 1,
        "submitted": 1,
        "approved": 0,
        "rejected": 0,
    }
    rows = {r.assignment: r for r in live.rows}
    assert rows[claims[3].pk].worker == worker_pseudonym(provider="local", external_id="w3")
    assert rows[claims[2].pk].elapsed_seconds >= first_claim_seconds(batch)
    assert rows[claims[2].pk].state == "timed_out" and rows[claims[3].pk].state == "working"
    page = member(django_user_model, paired_run, "vera", ProjectRole.VIEWER)
    response = page.get(f"/api/batches/{batch.pk}/status/")
    check(schema, "/api/batches/{batch_id}/status/", "get", response)
    assert response.json()["counts"]["working"] == 1
    assert "w3" not in json.dumps(response.json())  # pseudonyms only
    out = io.StringIO()
    call_command("batch_status", str(batch.pk), stdout=out)
    assert "working 1  timed_out 1  returned 1  submitted 1" in out.getvalue()


# Data browser


@pytest.fixture
def judged(proposed):
    """An ECCV batch with the paper's gold, each HIT judged by three simulated workers who
    sometimes fail gold (those HITs held for review)."""
    batch = batch_publish(
        batch=batch_create(
            run=proposed,
            stage=EccvStage.JUDGMENT,
            provider="simulated",
            items_per_hit=6,
            assignments_per_hit=3,
        )
    )
    simulate_crowd(batch=batch, workers=3, profile=WorkerProfile(accuracy=0.75, gold_accuracy=0.8))
    return batch


def test_data_browser_filters(judged, admin_client):
    run = judged.run
    stage = EccvStage.JUDGMENT
    everything = list(run_items(run=run, stage=stage))
    gold = list(run_items(run=run, stage=stage, gold="gold"))
    real = list(run_items(run=run, stage=stage, gold="real"))
    assert gold and real and len(gold) + len(real) == len(everything)
    assert all(i.kind in GOLD_KINDS for i in gold)
    held = list(run_items(run=run, stage=stage, held="held"))
    open_reviews = Review.objects.filter(assignment__hit__batch=judged, status="open")
    assert open_reviews.exists() and held
    rows = item_rows(items=held, stage=stage)
    assert {r for row in rows for r in row.reviews} <= set(
        open_reviews.values_list("pk", flat=True)
    )
    assert all(row.reviews for row in rows)
    agree = item_rows(items=list(run_items(run=run, stage=stage, agreement="agree")), stage=stage)
    disagree = item_rows(
        items=list(run_items(run=run, stage=stage, agreement="disagree")), stage=stage
    )
    assert agree and disagree
    assert all(len(set(r.counted_labels)) == 1 < len(r.counted_labels) for r in agree)
    assert all(r.agreement == 1.0 for r in agree)
    assert all(len(set(r.counted_labels)) >= 2 and r.agreement < 1.0 for r in disagree)
    page = admin_client.get(f"/runs/{run.pk}/data/?stage={stage}&held=held").content.decode()
    assert page.count('class="item-row') == min(len(held), 25)
    shown = {r for row in item_rows(items=held[:25], stage=stage) for r in row.reviews}
    assert shown and all(f'href="/review/{r}/"' in page for r in shown)
    real_page = admin_client.get(f"/runs/{run.pk}/data/?stage={stage}&gold=real").content.decode()
    assert f"{len(real)} items" in real_page


def test_data_browser_queries_do_not_grow_with_rows(paired_run, admin_client):
    selection_done_factory(paired_run, workers=2)

    def queries(limit):
        with CaptureQueriesContext(connection) as captured:
            items = list(run_items(run=paired_run, stage=BisonStage.SELECTION)[:limit])
            rows = item_rows(items=items, stage=BisonStage.SELECTION)
            assert len(rows) == limit
            assert all(r.answers for r in rows)
        return len(captured)

    assert queries(1) == queries(5) == 2
    url = f"/runs/{paired_run.pk}/data/?stage={BisonStage.SELECTION}"
    admin_client.get(url)  # warm the session and the user

    def page_queries(per_page, monkeypatch_value):
        from annotation.pages.runs import data as run_data_views

        before = run_data_views.PER_PAGE
        run_data_views.PER_PAGE = monkeypatch_value
        try:
            with CaptureQueriesContext(connection) as captured:
                page = admin_client.get(url).content.decode()
        finally:
            run_data_views.PER_PAGE = before
        assert page.count('class="item-row') == per_page
        return len(captured)

    assert page_queries(1, 1) == page_queries(5, 5)


def test_data_browser_in_the_api_and_the_cli(judged, django_user_model, schema):  # noqa: F811
    run = judged.run
    vera = member(django_user_model, run, "vera", ProjectRole.VIEWER)
    response = vera.get(f"/api/runs/{run.pk}/items/?stage={EccvStage.JUDGMENT}&gold=gold&limit=3")
    check(schema, "/api/runs/{run_id}/items/", "get", response)
    body = response.json()
    assert body["count"] == run_items(run=run, stage=EccvStage.JUDGMENT, gold="gold").count()
    assert len(body["results"]) == 3 and all(r["gold"] for r in body["results"])
    assert vera.get(f"/api/runs/{run.pk}/items/").status_code == 400  # the stage is required
    out = io.StringIO()
    call_command(
        "run_items", str(run.pk), "--stage", EccvStage.JUDGMENT, "--held", "held", stdout=out
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines and all(line["reviews"] for line in lines)


# Exports page


def test_exports_page_renders_the_datasheet_and_the_manifest(judged, run_on_commit, admin_client):
    from annotation.services.work.reviews import review_decide

    for review in Review.objects.filter(status="open"):
        review_decide(review=review, approve=True)
    job = run_on_commit(eccv_export_start, run=judged.run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    export = Export.objects.get(run=judged.run)
    assert export.manifest["instructions"][EccvStage.JUDGMENT]["version"] == "default"
    assert export.manifest["consent"]["version"]
    page = admin_client.get(f"/runs/{judged.run_id}/exports/").content.decode()
    assert 'class="datasheet"' in page and "<h2>Datasheet: " in page
    assert "<h3>Composition</h3>" in page and "<pre><code>{" in page
    assert "&quot;instructions&quot;" in page  # the manifest, as JSON text


def test_a_chosen_caption_is_shown_by_its_text_never_as_a_number(paired_run):
    """Issue 46: BISON stage 2's caption ids were averaged as ratings ("81234.00")."""
    selection_done_factory(paired_run, workers=2)
    items = list(run_items(run=paired_run, stage=BisonStage.SELECTION))
    rows = item_rows(items=items, stage=BisonStage.SELECTION)
    picked = [r for r in rows if any(a.caption for a in r.answers if a.counted)]
    assert picked
    texts = {a.caption for r in picked for a in r.answers if a.caption}
    for row in picked:
        assert row.aggregate in texts | {"none", "tie"}
        assert not row.aggregate.replace(".", "", 1).isdigit()


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
