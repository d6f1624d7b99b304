"""The review page in headless Chromium at a laptop's 1280 px (issue 46): a held BISON
verification and a held CxC image-image review show both images of every pair, loaded, with
no horizontal scroll; so does the queue. Screenshots go to the worktree's
.fragments/screens/ (CROWDVL_SHOTS overrides)."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.flows.cxc.vocabulary import CxcStage
from tests.annotation.held_reviews import bison_verification_held, cxc_held
from tests.annotation.pages.dashboard.test_views_full_run_browser import sign_in
from tests.annotation.pages.work.test_shell_browser import browser  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(os.environ.get("CROWDVL_SHOTS") or Path(__file__).parents[4] / ".fragments/screens")
WIDTH = 1280


@pytest.fixture
def staff_tab(browser, live_server, django_user_model):  # noqa: F811
    django_user_model.objects.create_superuser("staff", password="pw")
    context = browser.new_context(viewport={"width": WIDTH, "height": 900})
    tab = context.new_page()
    sign_in(tab, live_server, "staff")
    yield tab
    context.close()


def look(tab, url: str, name: str) -> None:
    tab.goto(url)
    tab.wait_for_load_state("networkidle")
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    assert tab.evaluate("document.documentElement.scrollWidth") <= WIDTH, name
    assert tab.evaluate("document.body.scrollWidth") <= WIDTH, name


def test_held_pairs_are_judged_without_scrolling_sideways(
    staff_tab, live_server, paired_run, dataset
):
    tab = staff_tab
    verification = bison_verification_held(paired_run)
    sis = cxc_held(dataset, CxcStage.SIS)
    for review, name in ((verification, "review_bison_verification"), (sis, "review_cxc_sis")):
        look(tab, f"{live_server.url}/review/{review.pk}/", name)
        questions = review.assignment.hit.questions.count()
        rows = tab.locator("#answers tbody tr")
        expect(rows).to_have_count(questions)
        for n in range(questions):
            expect(rows.nth(n).locator("img")).to_have_count(2)  # both images of the pair
        loaded = tab.evaluate(
            "[...document.querySelectorAll('#answers img')].every(i => i.naturalWidth > 0)"
        )
        assert loaded, f"{name}: an image did not load"
        expect(tab.locator("#held-because li").first).to_be_visible()
        expect(tab.locator("#worker-history")).to_be_visible()
    look(tab, f"{live_server.url}/review/", "review_queue")
    expect(tab.locator("#open-reviews td.reasons li").first).to_be_visible()
