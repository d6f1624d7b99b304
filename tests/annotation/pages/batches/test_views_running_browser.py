"""Issue 28 in headless Chromium: a researcher previews a batch's task pages, edits the consent
text (a worker in the middle of the run is asked again), pauses a batch (a new claim is
refused, the open one submits), watches the live status change without reloading and filters
the data browser. Screenshots of each page go to CROWDVL_SHOTS when it is set."""

import re

import pytest
from playwright.sync_api import expect

from annotation.crowd.local.invitations import invitations_create
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.services.export import eccv_export_start
from annotation.models import Answer, Assignment, AssignmentState, BatchStatus, Review
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.projects import project_member_set
from tests.annotation.pages.dashboard.test_views_full_run_browser import sign_in
from tests.annotation.pages.work.test_shell_browser import begin, browser, shot  # noqa: F401
from tests.annotation.selectors.datasets.test_data_browser import judged  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def researcher(browser, live_server, paired_run, django_user_model):  # noqa: F811
    django_user_model.objects.create_user("rosa", password="pw")
    project_member_set(project=paired_run.project.name, username="rosa", role="researcher")
    context = browser.new_context()
    tab = context.new_page()
    sign_in(tab, live_server, "rosa")
    yield tab
    context.close()


@pytest.fixture
def worker_tab(browser):  # noqa: F811
    contexts = []

    def new():
        context = browser.new_context()
        contexts.append(context)
        return context.new_page()

    yield new
    for context in contexts:
        context.close()


def published(run, **kwargs):
    return batch_publish(
        batch=batch_create(
            run=run, stage=BisonStage.SELECTION, provider="local", items_per_hit=2, **kwargs
        )
    )


def answer_all(tab):
    for _ in range(tab.locator("fieldset.question").count()):
        tab.keyboard.press("1")
    expect(tab.locator("#submit")).to_be_enabled()


def test_preview_of_a_draft_from_the_batch_page(researcher, live_server, paired_run):
    draft = batch_create(
        run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=2
    )
    tab = researcher
    tab.goto(f"{live_server.url}/batches/{draft.pk}/")
    tab.click("#preview-link a")
    expect(tab.locator("#preview-banner")).to_contain_text("what a worker sees")
    expect(tab.locator("fieldset.question")).to_have_count(2)
    expect(tab.locator("img[alt='left image']").first).to_be_visible()
    shot(tab, "preview")
    tab.click("#preview-next")
    expect(tab.locator("#preview-nav")).to_contain_text(f"task 2 of {draft.hits.count()}")
    answer_all(tab)
    tab.click("#submit")
    expect(tab.locator(".messages")).to_contain_text("would be accepted")
    assert not Answer.objects.exists() and not Assignment.objects.exists()


def test_edited_consent_asks_a_working_worker_again(
    researcher, worker_tab, live_server, paired_run
):
    batch = published(paired_run)
    worker = worker_tab()
    begin(worker, live_server, batch, "wanda")
    answer_all(worker)
    worker.click("#submit")
    expect(worker.locator(".messages")).to_contain_text("answers were saved")

    tab = researcher
    tab.goto(f"{live_server.url}/runs/{paired_run.pk}/")
    tab.click("#run-texts-link")
    new_text = "Version two of the study information: you may stop at any time."
    tab.fill("#consent-text-input", new_text)
    tab.click("#consent-preview-button")
    expect(tab.locator("#consent-preview")).to_contain_text(new_text)
    tab.fill("#instructions-bison_selection textarea", "Pick the caption that fits the left image.")
    tab.click("#instructions-bison_selection .preview-button")
    frame = tab.frame_locator("#instructions-bison_selection iframe")
    expect(frame.locator("#run-instructions")).to_contain_text("fits the left image")
    shot(tab, "texts")
    tab.fill("#consent-text-input", new_text)
    tab.click("#consent-save")
    expect(tab.locator(".messages")).to_contain_text("Saved")

    # The worker's next task: not before they accept the new text, on their link's page.
    worker.goto(f"{live_server.url}/work/{batch.pk}/next/")
    expect(worker.locator("#consent-text")).to_contain_text("Version two")
    worker.click("#consent")
    worker.click(f"#batches a[href='/work/{batch.pk}/']")
    worker.click("#start")
    expect(worker.locator("#task-form")).to_be_visible()


def test_pause_refuses_a_new_claim_and_the_open_one_submits(
    researcher, worker_tab, live_server, paired_run
):
    batch = published(paired_run)
    busy = worker_tab()
    begin(busy, live_server, batch, "busy")  # their task page is open
    late = worker_tab()
    invitation = invitations_create(run=paired_run, labels=["late"])[0]
    late.goto(f"{live_server.url}/join/{invitation.token}/")
    late.click("#consent")

    tab = researcher
    tab.goto(f"{live_server.url}/batches/{batch.pk}/")
    tab.click("#pause")
    expect(tab.locator(".messages")).to_contain_text("paused")
    expect(tab.locator("#resume")).to_be_visible()
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PAUSED

    late.goto(f"{live_server.url}/work/{batch.pk}/next/")
    expect(late.locator("#reason")).to_contain_text("paused")
    assert not Assignment.objects.filter(worker__external_id="late").exists()
    answer_all(busy)
    busy.click("#submit")
    expect(busy.locator(".messages")).to_contain_text("answers were saved")
    assert Assignment.objects.get(worker__external_id="busy").state == AssignmentState.SUBMITTED


def test_live_status_changes_without_reload(researcher, worker_tab, live_server, paired_run):
    batch = published(paired_run)
    tab = researcher
    tab.goto(f"{live_server.url}/batches/{batch.pk}/")
    expect(tab.locator("#live-count-working")).to_have_text("0")
    tab.evaluate("window.notReloaded = true")
    worker = worker_tab()
    begin(worker, live_server, batch, "wanda")
    expect(tab.locator("#live-count-working")).to_have_text("1", timeout=10_000)
    expect(tab.locator("#live-rows tbody tr .state")).to_have_text(["working"])
    answer_all(worker)
    worker.click("#submit")
    expect(tab.locator("#live-count-submitted")).to_have_text("1", timeout=10_000)
    # The worker's next task was claimed on the way: newest first.
    expect(tab.locator("#live-rows tbody tr .state")).to_have_text(["working", "submitted"])
    assert tab.evaluate("window.notReloaded") is True
    shot(tab, "batch-live-status")


def test_data_browser_filters_and_exports_page(researcher, live_server, judged):  # noqa: F811
    tab = researcher
    proposed = judged.run
    tab.goto(f"{live_server.url}/runs/{proposed.pk}/data/")
    total = int(tab.locator("#data-count").inner_text().split()[0])
    assert total > 0
    tab.select_option("#filter-gold", "gold")
    tab.click("#filter-apply")
    gold = int(tab.locator("#data-count").inner_text().split()[0])
    assert 0 < gold < total
    expect(tab.locator("tr.item-row:not(.gold)")).to_have_count(0)
    tab.select_option("#filter-gold", "")
    tab.select_option("#filter-held", "held")
    tab.click("#filter-apply")
    expect(tab.locator("tr.item-row").first).to_be_visible()
    review = tab.locator("a.review-link").first
    review_id = int(review.get_attribute("href").strip("/").split("/")[-1])
    assert Review.objects.get(pk=review_id).status == "open"
    shot(tab, "data-browser")
    review.click()
    expect(tab).to_have_url(f"{live_server.url}/review/{review_id}/")

    for open_review in Review.objects.filter(status="open"):
        from annotation.services.work.reviews import review_decide

        review_decide(review=open_review, approve=True)
    eccv_export_start(run=proposed)
    tab.goto(f"{live_server.url}/runs/{proposed.pk}/exports/")
    expect(tab.locator("details.datasheet h2").first).to_contain_text("Datasheet")
    # Its tables read as words: no JSON in any cell, booleans as yes/no.
    sheet = tab.locator("details.datasheet .datasheet-text").first
    cells = sheet.locator("td").all_inner_texts()
    assert cells and not [c for c in cells if re.search(r"[{}\[\]]|^(true|false|null)$|---", c)]
    rows = [r.split("\t") for r in sheet.locator("tr").all_inner_texts()]
    assert ["eccv_judgment", "default", "no"] in rows
    tab.click("details.manifest summary")
    expect(tab.locator("details.manifest pre")).to_contain_text('"instructions"')
    shot(tab, "exports")
