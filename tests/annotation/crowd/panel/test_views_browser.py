"""A panel participant in headless Chromium (Debian's build, driven by Playwright): arriving
by the study link with their id, consenting, answering a HIT on the task page and seeing the
completion code."""

import pytest
from playwright.sync_api import expect

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Answer, Assignment, AssignmentState
from annotation.services.runs.batches import batch_create, batch_publish
from tests.annotation.pages.work.test_shell_browser import browser, page  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_participant_arrives_consents_answers_and_gets_the_code(
    page,  # noqa: F811
    live_server,
    paired_run,
):
    batch = batch_publish(
        batch=batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="panel",
            items_per_hit=100,
            options={"panel": {"id_param": "id", "completion": {"completed": "CR-7731"}}},
        )
    )
    questions = batch.hits.get().questions.count()
    page.goto(f"{live_server.url}/panel/{batch.pk}/?id=5f3a9c2e81")
    expect(page.locator("#consent-text")).to_contain_text("research study")
    assert "5f3a9c2e81" not in page.url  # the id left the address bar
    page.click("#consent")
    page.click("#start")
    page.wait_for_selector("#task-form")
    expect(page.locator("fieldset.question")).to_have_count(questions)
    expect(page.locator("#finish")).to_be_visible()  # they may stop and finish here
    for _ in range(questions):
        page.keyboard.press("6")  # "None of the above" (5 captions + none), focus moves on
    expect(page.locator("#submit")).to_be_enabled()
    page.click("#submit")
    expect(page.locator("#completion-code")).to_have_text("CR-7731")

    assignment = Assignment.objects.get(worker__external_id="5f3a9c2e81")
    assert assignment.state == AssignmentState.SUBMITTED and not assignment.confirmed
    assert Answer.objects.filter(assignment=assignment, label="none").count() == questions
