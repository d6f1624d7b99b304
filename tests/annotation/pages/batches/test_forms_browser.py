"""The new-batch form in headless Chromium: choosing another stage puts that stage's default
sizes in the size fields left as they were, and keeps a size the researcher typed."""

import pytest
from playwright.sync_api import expect

from annotation.flows.bison.vocabulary import BisonStage
from tests.annotation.pages.dashboard.test_views_full_run_browser import sign_in
from tests.annotation.pages.work.test_shell_browser import browser, page  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_choosing_a_stage_shows_its_default_sizes(page, live_server, paired_run, admin_user):  # noqa: F811
    sign_in(page, live_server, admin_user.username, password="password")
    page.goto(f"{live_server.url}/runs/{paired_run.pk}/batches/new/")
    workers = page.locator("input[name=assignments_per_hit]")
    expect(workers).to_have_value("1")  # selection: one worker per HIT
    page.select_option("select[name=stage]", BisonStage.VERIFICATION)
    expect(workers).to_have_value("2")  # verification: the run's verifiers
    page.fill("input[name=items_per_hit]", "4")
    page.select_option("select[name=stage]", BisonStage.SELECTION)
    expect(workers).to_have_value("1")
    expect(page.locator("input[name=items_per_hit]")).to_have_value("4")
    expect(page.locator("#setting-assignments_per_hit .help")).to_contain_text(
        "Default: BISON stage 2: caption selection 1, BISON stage 3: verification 2."
    )
