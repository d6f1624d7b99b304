"""CxC rating pages in headless Chromium: keys 0-5 rate the highlighted pair."""

import pytest
from playwright.sync_api import expect

from annotation.flows.cxc.services.sampling import cxc_run_create, cxc_sample_start
from annotation.flows.cxc.vocabulary import CxcItemKind, CxcStage
from annotation.models import Answer, Assignment, AssignmentState
from annotation.services.runs.batches import batch_create, batch_publish
from tests.annotation.pages.work.test_shell_browser import begin, browser, page  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SMALL = {
    "sis_pairs": 4,
    "sts_pairs": 4,
    "cocaption_pairs": 2,
    "neighbours": 3,
    "random_per_example": 1,
    "text_epochs": 5,
    "text_dim": 16,
}


@pytest.mark.parametrize(
    ("stage", "shown"),
    [(CxcStage.SIS, "img[alt='first image']"), (CxcStage.STS, "p.query")],
)
def test_a_rating_hit_with_the_keyboard(page, live_server, dataset, stage, shown):  # noqa: F811
    run = cxc_run_create(dataset=dataset, config=SMALL)
    cxc_sample_start(run=run, image_embeddings_path=None, standin=True)
    batch = batch_publish(
        batch=batch_create(run=run, stage=stage, provider="local", items_per_hit=3, limit=3)
    )
    begin(page, live_server, batch, "rater-1")
    expect(page.locator("fieldset.question")).to_have_count(3)
    expect(page.locator(shown).first).to_be_visible()
    expect(page.locator(".rubric li")).to_have_count(6)
    assert page.content().count("<kbd>0</kbd>–<kbd>5</kbd>") == 1  # the keys are told once
    submit = page.locator("#submit")
    expect(submit).to_be_disabled()
    page.keyboard.press("0")
    page.keyboard.press("5")
    expect(page.locator("#progress")).to_have_text("2 / 3 answered")
    page.keyboard.press("3")
    expect(submit).to_be_enabled()
    submit.click()
    expect(page.locator(".messages")).to_contain_text("answers were saved")
    assignment = Assignment.objects.get(worker__external_id="rater-1")
    assert assignment.state == AssignmentState.SUBMITTED
    # The page told when the first answer was given: active time for pay starts there.
    assert assignment.accepted_at <= assignment.started_at <= assignment.submitted_at
    ratings = dict(
        Answer.objects.filter(assignment=assignment).values_list("question__position", "label")
    )
    assert ratings == {0: "0", 1: "5", 2: "3"}


def test_an_image_caption_hit_in_the_browser(page, live_server, dataset):  # noqa: F811
    from annotation.models import Item

    run = cxc_run_create(dataset=dataset, config=SMALL)
    for image in dataset.images.order_by("pk")[:2]:
        Item.objects.create(
            run=run,
            kind=CxcItemKind.RATING_PAIR,
            positive=image,
            caption=image.captions.first(),
            tag="c2i_original",
        )
    batch = batch_publish(
        batch=batch_create(run=run, stage=CxcStage.SITS, provider="local", items_per_hit=2)
    )
    begin(page, live_server, batch, "rater-sits")
    expect(page.locator("img[alt='image']")).to_have_count(2)
    expect(page.locator("p.query")).to_have_count(2)
    page.keyboard.press("4")
    page.keyboard.press("2")
    page.locator("#submit").click()
    expect(page.locator(".messages")).to_contain_text("answers were saved")
    labels = sorted(
        Answer.objects.filter(assignment__worker__external_id="rater-sits").values_list(
            "label", flat=True
        )
    )
    assert labels == ["2", "4"]
