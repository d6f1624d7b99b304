"""Caption-quality pages in headless Chromium: rating keys by value, preference by side."""

import json

import pytest
from playwright.sync_api import expect

from annotation.flows.quality.services.candidates import (
    quality_candidates_import,
    quality_run_create,
)
from annotation.flows.quality.vocabulary import QualityStage
from annotation.models import Answer, Assignment
from annotation.services.runs.batches import batch_create, batch_publish
from tests.annotation.pages.work.test_shell_browser import begin, browser, page  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def run(dataset, tmp_path):
    run = quality_run_create(dataset=dataset, config={"pairs_per_image": 1})
    images = list(dataset.images.values_list("coco_id", flat=True))
    for model, text in (("m1", "a dog on the grass"), ("m2", "a cat on a sofa")):
        path = tmp_path / f"{model}.json"
        path.write_text(json.dumps([{"image_id": i, "caption": text} for i in images]))
        quality_candidates_import(run=run, model=model, path=str(path))
    return run


def test_rating_captions_with_the_keyboard(page, live_server, run):  # noqa: F811
    batch = batch_publish(
        batch=batch_create(
            run=run, stage=QualityStage.RATING, provider="local", items_per_hit=2, limit=2
        )
    )
    begin(page, live_server, batch, "judge-1")
    expect(page.locator("fieldset.question")).to_have_count(2)
    expect(page.locator(".rubric li").first).to_contain_text("without any errors")
    page.keyboard.press("4")
    page.keyboard.press("1")
    page.locator("#submit").click()
    expect(page.locator(".messages")).to_contain_text("answers were saved")
    labels = dict(
        Answer.objects.filter(assignment__worker__external_id="judge-1").values_list(
            "question__position", "label"
        )
    )
    assert labels == {0: "4", 1: "1"}


def test_preferring_a_caption_in_the_browser(page, live_server, run):  # noqa: F811
    batch = batch_publish(
        batch=batch_create(
            run=run, stage=QualityStage.PREFERENCE, provider="local", items_per_hit=3, limit=3
        )
    )
    begin(page, live_server, batch, "judge-2")
    expect(page.locator("fieldset.question")).to_have_count(3)
    for _ in range(3):
        page.keyboard.press("1")  # caption A each time
    page.locator("#submit").click()
    expect(page.locator(".messages")).to_contain_text("answers were saved")
    assignment = Assignment.objects.get(worker__external_id="judge-2")
    for answer in Answer.objects.filter(assignment=assignment).select_related("question"):
        assert answer.choice == "a"
        assert answer.label == ("second" if answer.question.swapped else "first")


def test_yes_no_judgments_in_the_browser(page, live_server, run):  # noqa: F811
    batch = batch_publish(
        batch=batch_create(
            run=run,
            stage=QualityStage.BINARY,
            provider="local",
            items_per_hit=2,
            limit=2,
            assignments_per_hit=3,
        )
    )
    begin(page, live_server, batch, "judge-3")
    expect(page.locator("fieldset.question")).to_have_count(2)
    page.keyboard.press("1")  # yes
    page.keyboard.press("2")  # no
    page.locator("#submit").click()
    expect(page.locator(".messages")).to_contain_text("answers were saved")
    labels = dict(
        Answer.objects.filter(assignment__worker__external_id="judge-3").values_list(
            "question__position", "label"
        )
    )
    assert labels == {0: "yes", 1: "no"}
