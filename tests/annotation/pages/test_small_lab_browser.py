"""Issue 46's "Done means", in headless Chromium: a lab of three people finishes all of BISON.
Ana does stage 2 while the researcher edits the consent text (her task in progress is kept and
recorded under the version she accepted; her next task asks again). The stage-3 draft says how
many people its image rule needs; relaxed for the lab's trusted pool, Ben and Cy finish it,
Ben after closing his browser mid-task and coming back by his link. A reviewer judges held
BISON work of both stages and a held CxC image–image answer from the review page alone.
Screenshots go to CROWDVL_SHOTS when set (`make screenshots` retakes docs/screenshots/)."""

import re

import pytest
from playwright.sync_api import expect

from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    Question,
    Review,
    ReviewStatus,
    Run,
)
from annotation.selectors.counting import counted
from annotation.selectors.runs.batch_reach import batch_reach
from annotation.selectors.work.invitations import run_consent
from annotation.services.runs.projects import project_default, project_member_set
from annotation.services.work.reviews import reviews_hold_all
from tests.annotation.held_reviews import cxc_held
from tests.annotation.pages.dashboard.test_views_full_run_browser import (
    invite,
    launch,
    sign_in,
    upload,
)
from tests.annotation.pages.work.test_shell_browser import browser, shot  # noqa: F401
from tests.factories import placeholder_images, write_coco

pytestmark = [pytest.mark.long, pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def fits(tab):
    assert tab.evaluate("document.documentElement.scrollWidth") <= 1280, tab.url


def keys_for(worker, stage):
    """What a careful worker presses on their open HIT, question by question: stage 2 its
    first caption, stage 3 the side the positive is on (read from the database, as the worker
    would see it)."""
    assignment = Assignment.objects.get(
        worker__invitations__label=worker,
        state=AssignmentState.ACCEPTED,
        hit__batch__stage=stage,
    )
    questions = Question.objects.filter(hit=assignment.hit).order_by("position")
    if stage == BisonStage.SELECTION:
        return ["1" for _ in questions]
    return ["2" if q.swapped else "1" for q in questions]


def start(tab, link, batch_id):
    tab.goto(link)
    if tab.locator("#consent").count():
        tab.click("#consent")
    tab.click(f"#batches a[href='/work/{batch_id}/']")
    tab.click("#start")
    tab.wait_for_selector("#task-form")


def answer_and_submit(tab, keys):
    for key in keys:
        tab.keyboard.press(key)
    expect(tab.locator("#submit")).to_be_enabled()
    tab.click("#submit")


def work_on(tab, worker, stage, batch_id):
    """Answer every task the server gives, the consent asked again where it changed; HITs
    answered and times the consent was asked."""
    hits = asked = 0
    while True:
        tab.wait_for_selector("#task-form, #done, #consent")
        if tab.locator("#consent").count():
            asked += 1
            tab.click("#consent")  # on their link's page, then on to the batch
            tab.click(f"#batches a[href='/work/{batch_id}/']")
            tab.click("#start")
            continue
        if tab.locator("#done").count():
            return hits, asked
        answer_and_submit(tab, keys_for(worker, stage))
        hits += 1


def judge(reviewer, base, review, *, images, words):
    """The reviewer opens `review` from the queue and approves it, having seen `images`
    images and `words` on the page."""
    reviewer.goto(f"{base}/review/")
    reviewer.locator(f"a[href='/review/{review.pk}/']").first.click()
    page = reviewer.locator("main, body").first
    for word in words:
        expect(page).to_contain_text(word)
    assert reviewer.locator("table img").count() >= images
    assert "{'" not in page.inner_text()  # no raw reason dicts
    fits(reviewer)
    return page


def test_three_people_finish_bison_and_a_reviewer_judges_held_work(  # noqa: PLR0915
    browser,  # noqa: F811
    live_server,
    tmp_path,
    django_user_model,
    dataset,
):
    base = live_server.url
    django_user_model.objects.create_user("rosa", password="pw")
    django_user_model.objects.create_user("rex", password="pw")
    project_member_set(project=project_default().name, username="rosa", role="researcher")
    project_member_set(project=project_default().name, username="rex", role="reviewer")
    tab = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    sign_in(tab, live_server, "rosa")

    # The lab's data and a BISON run that holds work faster than 30 s per item for a person.
    tab.goto(f"{base}/datasets/import/")
    upload(
        tab,
        live_server,
        write_coco(tmp_path / "up" / "lab.json"),
        "lab",
        placeholder_images(tmp_path / "img"),
    )
    tab.goto(f"{base}/runs/new/bison/")
    tab.select_option("select[name=dataset]", label="lab")
    tab.fill("input[name=name]", "small lab")
    tab.fill("input[name=config_hold_fast_seconds_per_item]", "30")
    tab.click("#create")
    run = Run.objects.get(name="small lab")
    tab.click("#start-pairing")
    expect(tab.locator("#jobs .state").first).to_have_text("succeeded", timeout=60_000)

    # Stage 2 by Ana; the researcher edits the consent text while her first task is open.
    selection = launch(tab, live_server, run.pk, BisonStage.SELECTION, items_per_hit=3)
    links = invite(tab, live_server, run.pk, ["ana", "ben", "cy"])
    ana = browser.new_context().new_page()
    start(ana, links["ana"], selection)
    accepted = run_consent(run)["version"]
    ana.keyboard.press("1")
    tab.goto(f"{base}/runs/{run.pk}/texts/")
    tab.fill("#consent-text-input", "We study captions. You may stop at any time. (edited)")
    tab.click("#consent-save")
    changed = run_consent(Run.objects.get(pk=run.pk))["version"]
    assert changed != accepted
    answer_and_submit(ana, keys_for("ana", BisonStage.SELECTION)[1:])
    expect(ana.locator(".messages")).to_contain_text("answers were saved")
    hits, asked = work_on(ana, "ana", BisonStage.SELECTION, selection)
    first = Assignment.objects.filter(worker__invitations__label="ana").order_by("pk")
    assert first[0].consent_version == accepted and first[0].state != AssignmentState.ACCEPTED
    if hits:  # a next task asked for the new text first
        assert asked == 1 and first.last().consent_version == changed
    assert Batch.objects.get(pk=selection).status == BatchStatus.COMPLETED

    # The reviewer approves Ana's held work from the review page alone.
    rex = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    sign_in(rex, live_server, "rex")
    assert reviews_hold_all() > 0  # the periodic approval policy holds her fast work
    assert Review.objects.filter(assignment__hit__batch_id=selection).exists()
    for review in Review.objects.filter(
        assignment__hit__batch_id=selection, status=ReviewStatus.OPEN
    ):
        judge(rex, base, review, images=2, words=["Caption", "faster than the run's rule"])
        shot(rex, "review_bison_selection")
        rex.click("button[value=approve]")
        expect(rex.locator(".messages")).to_contain_text("Approved")

    # Stage 3: under the image rule the lab is too small, and the draft says so.
    tab.goto(f"{base}/runs/{run.pk}/batches/new/")
    tab.select_option("select[name=stage]", BisonStage.VERIFICATION)
    tab.select_option("select[name=provider]", "local")
    tab.fill("input[name=items_per_hit]", "2")
    tab.click("#estimate")
    strict = Batch.objects.filter(run=run, stage=BisonStage.VERIFICATION).get()
    need = batch_reach(batch=strict)
    assert need.members == 2 and need.more_people > 0  # Ben and Cy cannot finish it
    expect(tab.locator("#reach")).to_contain_text(f"at least {need.more_people} more")
    expect(tab.locator("#reach")).to_contain_text("Relax image-disjointness")
    shot(tab, "batch_reach_strict")
    tab.click("#discard")
    # Relaxed for the lab's trusted pool: the same two can.
    tab.goto(f"{base}/runs/{run.pk}/batches/new/")
    tab.select_option("select[name=stage]", BisonStage.VERIFICATION)
    tab.select_option("select[name=provider]", "local")
    tab.fill("input[name=items_per_hit]", "2")
    expect(tab.locator("input[name=relax_image_disjointness]")).to_be_visible()
    tab.check("input[name=relax_image_disjointness]")
    tab.click("#estimate")
    expect(tab.locator("#images-relaxed")).to_be_visible()
    expect(tab.locator("#reach")).to_contain_text("can fill all")
    fits(tab)
    shot(tab, "batch_reach_relaxed")
    verification = int(re.search(r"/batches/(\d+)/", tab.url).group(1))
    tab.click("#publish")
    expect(tab.locator(".messages")).to_contain_text("published")

    # Ben answers half a HIT, closes his browser, and comes back by his link.
    ben_browser = browser.new_context()
    ben = ben_browser.new_page()
    start(ben, links["ben"], verification)
    keys = keys_for("ben", BisonStage.VERIFICATION)
    ben.keyboard.press(keys[0])
    expect(ben.locator("#draft-status")).to_have_text("Answers saved")
    ben_browser.close()
    ben = browser.new_context().new_page()
    ben.goto(links["ben"])
    ben.click("#open-tasks a")
    expect(ben.locator("#draft-status")).to_have_text("Your answers so far are back")
    answer_and_submit(ben, keys[1:])
    ben_hits, _ = work_on(ben, "ben", BisonStage.VERIFICATION, verification)
    cy = browser.new_context().new_page()
    start(cy, links["cy"], verification)
    answer_and_submit(cy, keys_for("cy", BisonStage.VERIFICATION))
    cy_hits, _ = work_on(cy, "cy", BisonStage.VERIFICATION, verification)
    batch = Batch.objects.get(pk=verification)
    assert batch.status == BatchStatus.COMPLETED
    assert 1 + ben_hits + 1 + cy_hits == batch.hits.count() * batch.assignments_per_hit
    # Ben's half-answered HIT counts once, with every question answered.
    bens = Assignment.objects.filter(counted(), worker__invitations__label="ben", hit__batch=batch)
    assert bens.count() == ben_hits + 1 and not bens.filter(answers__isnull=True).exists()

    # Held stage-3 work and a held CxC image–image answer, judged from the review page alone.
    reviews_hold_all()
    held = Review.objects.filter(assignment__hit__batch=batch, status=ReviewStatus.OPEN).first()
    assert held is not None, "fast stage-3 work was not held"
    judge(rex, base, held, images=2, words=["Query", "the positive", "faster than the run's rule"])
    shot(rex, "review_bison_verification")
    rex.click("button[value=approve]")
    expect(rex.locator(".messages")).to_contain_text("Approved")
    cxc = cxc_held(dataset, CxcStage.SIS)
    page = judge(rex, base, cxc, images=2, words=["expects", "FAILED"])
    assert "similar" in page.inner_text().lower()
    shot(rex, "review_cxc_image_image")
    rex.fill("textarea[name=feedback]", "The two images differ; please look at both.")
    rex.click("button[value=reject]")
    expect(rex.locator(".messages")).to_contain_text("Rejected")
    assert Review.objects.get(pk=cxc.pk).status == "rejected"
    tab.goto(f"{base}/runs/{run.pk}/")
    expect(tab.locator("#run-status")).to_have_text("verified")
