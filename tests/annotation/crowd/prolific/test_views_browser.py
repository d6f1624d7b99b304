"""A participant who arrives from Prolific, in headless Chromium: the study's link with the
three ids, the instructions and consent, one HIT answered, and the completion URL at
Prolific with the code of the outcome (the page at app.prolific.com is intercepted)."""

from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client
from playwright.sync_api import expect

from annotation.crowd.prolific import studies
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, AssignmentState
from annotation.services.runs.batches import batch_create, batch_sync
from tests.annotation.crowd.prolific.player import ProlificDriver
from tests.annotation.pages.work.test_shell_browser import browser, page  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_participant_from_prolific_consents_answers_and_lands_on_the_completion_url(
    page,  # noqa: F811
    live_server,
    paired_run,
    settings,
):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = ProlificDriver(Client())
    try:
        batch = driver.publish(
            batch_create(
                run=paired_run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=3
            )
        )
        study = batch.provider_hit_type_id
        pid = driver.pid("browser")
        session = driver.standin.start(study, pid)
        landed = []

        def prolific_site(route):
            landed.append(route.request.url)
            route.fulfill(status=200, body="<p id='prolific-ok'>Done</p>", content_type="text/html")

        page.route("https://app.prolific.com/**", prolific_site)
        page.goto(
            f"{live_server.url}/prolific/study/{batch.pk}/?PROLIFIC_PID={pid}"
            f"&STUDY_ID={study}&SESSION_ID={session}"
        )
        expect(page.locator("#instructions")).to_be_visible()
        expect(page.locator("#example svg")).to_have_count(2)  # a fixed example, no real item
        expect(page.locator("img")).to_have_count(0)
        expect(page.locator("#consent-text")).to_be_visible()
        expect(page.locator("#task-form")).to_have_count(0)  # nothing of the task before consent
        page.click("#consent")
        page.wait_for_selector("#task-form")
        expect(page.locator("fieldset.question")).to_have_count(3)
        for _ in range(3):
            page.keyboard.press("6")  # "None of the above" for each pair
        page.locator("#submit").click()
        expect(page.locator("#prolific-ok")).to_be_visible()
        code = parse_qs(urlparse(landed[0]).query)["cc"][0]
        assert code == studies.completion_code(batch, studies.COMPLETED)
        assignment = Assignment.objects.get(provider_assignment_id=session)
        assert assignment.state == AssignmentState.SUBMITTED and assignment.answers.count() == 3
        assert not assignment.confirmed  # counts once synchronisation sees it at Prolific
        driver.standin.complete(session, code)
        assert driver.standin.submissions[session]["status"] == "AWAITING REVIEW"
        assert batch_sync(batch=batch) == 1
        assignment.refresh_from_db()
        assert assignment.confirmed
        assert batch_sync(batch=batch) == 0  # seen again: nothing
    finally:
        driver.done()
