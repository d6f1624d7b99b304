"""The expected cost of an adaptive run's first batch, seen in headless Chromium: the researcher
fills the new-batch form and the estimate page shows minimum, expected and maximum."""

import re

import pytest
from playwright.sync_api import expect

from annotation.flows.cxc.services.sampling import cxc_run_create, cxc_sample_start
from annotation.flows.cxc.vocabulary import CxcStage
from tests.annotation.pages.dashboard.test_views_full_run_browser import sign_in
from tests.annotation.pages.work.test_shell_browser import browser, page  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SMALL = {
    "sis_pairs": 4,
    "sts_pairs": 4,
    "cocaption_pairs": 2,
    "neighbours": 3,
    "random_per_example": 1,
    "text_epochs": 5,
    "text_dim": 16,
    "adaptive": {"start": 2, "cap": 6, "half_width": 0.5},
}


def test_the_estimate_page_shows_the_adaptive_cost(page, live_server, dataset, django_user_model):  # noqa: F811
    django_user_model.objects.create_superuser("boss", "boss@example.org", "pw")
    run = cxc_run_create(dataset=dataset, config=SMALL)
    cxc_sample_start(run=run, image_embeddings_path=None, standin=True)
    sign_in(page, live_server, "boss")
    page.goto(f"{live_server.url}/runs/{run.pk}/batches/new/")
    page.select_option("select[name=stage]", CxcStage.STS)
    page.select_option("select[name=provider]", "local")
    page.fill("input[name=reward]", "0.50")
    page.click("#estimate")
    row = page.locator("#adaptive-cost")
    expect(row).to_be_visible()
    expect(page.locator("#slots")).to_be_visible()
    text = row.inner_text()
    low = int(re.search(r"minimum (\d+) judgments", text).group(1))
    high = int(re.search(r"maximum (\d+) judgments", text).group(1))
    middle = float(re.search(r"expected ([\d.]+) judgments", text).group(1))
    assert low < middle < high and high == 3 * low  # start 2, cap 6
    expect(page.locator("#adaptive-source")).to_contain_text("realistic population")
