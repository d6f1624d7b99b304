"""Full HITs answered in headless Chromium (Debian's build, driven by Playwright)."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from annotation.crowd.local.invitations import invitations_create
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Answer, Assignment, AssignmentState, Question
from annotation.services.runs.batches import batch_create, batch_publish
from tests.factories import selection_done_factory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = os.environ.get("CROWDVL_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


SHOTS = os.environ.get("CROWDVL_SHOTS", "")


def shot(tab, name):
    """A full-page screenshot into CROWDVL_SHOTS when it is set (`make screenshots`)."""
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        tab.wait_for_function("Array.from(document.images).every((i) => i.complete)")
        tab.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    yield page
    context.close()


def begin(page, live_server, batch, worker_id):
    """Open `worker_id`'s invitation link: consent, the batch list, Start."""
    invitation = invitations_create(run=batch.run, labels=[worker_id])[0]
    page.goto(f"{live_server.url}/join/{invitation.token}/")
    expect(page.locator("#consent-text")).to_be_visible()
    page.click("#consent")
    page.click(f"#batches a[href='/work/{batch.pk}/']")
    page.click("#start")
    page.wait_for_selector("#task-form")


def test_stage2_hit_in_the_browser(page, live_server, paired_run):
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=3
        )
    )
    begin(page, live_server, batch, "browser-alice")
    expect(page.locator("fieldset.question")).to_have_count(3)
    expect(page.locator("img[alt='left image']").first).to_be_visible()
    page.wait_for_function("document.querySelector('img').complete")  # its box shows first
    assert (
        page.evaluate("document.querySelector('img').naturalWidth") == 512
    )  # loaded through the token proxy, re-encoded
    submit = page.locator("#submit")
    expect(submit).to_be_disabled()

    page.keyboard.press("2")  # question 1: its second caption, then focus moves on
    page.keyboard.press("6")  # question 2: "None of the above" (5 captions + none)
    expect(page.locator("#progress")).to_have_text("2 / 3 answered")
    expect(submit).to_be_disabled()
    page.locator("fieldset#q2 label").first.click()  # question 3 with the mouse
    expect(submit).to_be_enabled()
    submit.click()
    expect(page.locator(".messages")).to_contain_text("answers were saved")

    assignment = Assignment.objects.get(worker__external_id="browser-alice", hit__position=0)
    assert assignment.state == AssignmentState.SUBMITTED
    stored = {
        a.question.position: a
        for a in Answer.objects.filter(assignment=assignment).select_related(
            "question__item__positive"
        )
    }
    captions = lambda q: sorted(c.coco_id for c in stored[q].question.item.positive.captions.all())  # noqa: E731
    assert stored[0].caption.coco_id == captions(0)[1]
    assert stored[1].label == "none" and stored[1].caption is None
    assert stored[2].caption.coco_id == captions(2)[0]


def test_stage3_hit_in_the_browser_and_unavailable_images(page, live_server, paired_run):
    selection_done_factory(paired_run)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="local", items_per_hit=100
        )
    )
    # Stage-3 HITs are image-disjoint: the toy run's triples fill two; the worker gets the first.
    mine = Question.objects.filter(hit__batch=batch, hit__position=0)
    first = mine.filter(position=0).select_related("item__positive").get()
    missing = first.item.positive
    missing.file_name = "COCO_val2014_missing.jpg"  # the file is not in the folder
    missing.save()

    begin(page, live_server, batch, "browser-verifier")
    questions = list(mine.order_by("position"))
    expect(page.locator("fieldset.question")).to_have_count(len(questions))
    expect(page.locator("fieldset#q0 .unavailable")).to_have_text("Unavailable")
    html = page.content().lower()
    assert "positive" not in html and "swapped" not in html

    keys = {"left": "1", "right": "2", "both": "3", "neither": "4"}
    intended = {}
    for q in questions:
        choice = "neither" if q.position == 0 else ("right" if q.swapped else "left")
        intended[q.position] = choice
        page.keyboard.press(keys[choice])
    expect(page.locator("#submit")).to_be_enabled()
    page.keyboard.press("Enter")
    # Nothing left for this worker: the other HIT shows images they had.
    expect(page.locator("#done")).to_be_visible()

    answers = Answer.objects.filter(
        assignment__worker__external_id="browser-verifier"
    ).select_related("question")
    assert {a.question.position: a.choice for a in answers} == intended
    labels = {a.question.position: a.label for a in answers}
    assert labels.pop(0) == "neither" and set(labels.values()) == {"positive"}


def test_eccv_hit_with_follow_ups_in_the_browser(page, live_server, proposed):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="local", items_per_hit=6
        )
    )
    begin(page, live_server, batch, "browser-judge")
    questions = page.locator("fieldset.question")
    total = questions.count()
    assert total >= 3
    html = page.content().lower()
    assert "gold" not in html and "candidate" not in html
    submit = page.locator("#submit")
    page.keyboard.press("2")  # question 1: "Partially YES, but" opens the follow-ups
    follow = page.locator("fieldset#q0 .follow-ups")
    expect(follow).to_be_visible()
    expect(page.locator("#progress")).to_have_text(f"0 / {total} answered")
    page.keyboard.press("1")  # ticks the first shortcoming; the answer stays "Partially YES"
    expect(page.locator("fieldset#q0 input[value=extra_concepts]")).to_be_checked()
    expect(page.locator("fieldset#q0 input[value=partially_yes]")).to_be_checked()
    page.keyboard.press("1")  # and unticks it
    expect(page.locator("fieldset#q0 input[value=extra_concepts]")).not_to_be_checked()
    page.keyboard.press("3")  # "describes the main concepts wrongly" asks for an error type
    expect(page.locator("fieldset#q0 input[value=wrong_description]")).to_be_checked()
    expect(page.locator("fieldset#q0 .error-types")).to_be_visible()
    expect(page.locator("#progress")).to_have_text(f"0 / {total} answered")  # needs an error type
    page.locator("fieldset#q0 input[value=color]").check()
    expect(page.locator("#progress")).to_have_text(f"1 / {total} answered")
    for n in range(1, total):
        page.locator(f"fieldset#q{n} input[value=yes]").check()
    expect(submit).to_be_enabled()
    submit.click()
    expect(page.locator(".messages")).to_contain_text("answers were saved")
    answer = Answer.objects.get(
        assignment__worker__external_id="browser-judge", question__position=0
    )
    assert answer.label == "partially_yes"
    assert answer.details == {"reasons": ["wrong_description"], "errors": ["color"]}


def answers_stay_put_while_images_load(page, live_server, batch, worker_id):
    """The page opened with its images held back: where the first and last questions' answers
    are before the images arrive is where they are after, so a click aimed while images load
    lands on what the worker aimed at."""
    held = []
    page.route(
        "**/*",
        lambda route: (
            held.append(route) if route.request.resource_type == "image" else route.continue_()
        ),
    )
    begin(page, live_server, batch, worker_id)
    answers = [
        page.locator("fieldset.question").first.locator("input").first,
        page.locator("fieldset.question").last.locator("input").first,
    ]
    before = [a.bounding_box() for a in answers]
    assert held, "no image was requested"
    assert page.evaluate("Array.from(document.images).every((i) => !i.complete)")
    for route in held:
        route.continue_()
    page.unroute("**/*")
    page.wait_for_function(
        "Array.from(document.images).every((i) => i.complete && i.naturalWidth > 0)"
    )
    assert [a.bounding_box() for a in answers] == before


def test_bison_answers_stay_put_while_images_load(page, live_server, paired_run):
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=3
        )
    )
    answers_stay_put_while_images_load(page, live_server, batch, "slow-images")


def test_eccv_answers_stay_put_while_images_load(page, live_server, proposed):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="local", items_per_hit=6
        )
    )
    answers_stay_put_while_images_load(page, live_server, batch, "slow-images")


def test_mturk_worker_page_stores_then_posts_to_external_submit(
    page, live_server, paired_run, settings
):
    """The page as MTurk frames it: no cookies needed, answers saved here, then posted to MTurk."""
    from urllib.parse import parse_qs

    from tests.annotation.drivers import MTurkDriver

    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    from django.test import Client

    driver = MTurkDriver(Client())
    batch = driver.publish(
        batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="mturk", items_per_hit=3)
    )
    hit = batch.hits.order_by("position").first()
    posted = []

    def external_submit(route):
        posted.append(parse_qs(route.request.post_data))
        route.fulfill(
            status=200, body="<p id='mturk-ok'>MTurk received it</p>", content_type="text/html"
        )

    page.route("https://workersandbox.mturk.com/**", external_submit)
    query = f"assignmentId=BROWSERASSIGNMENT1&hitId={hit.provider_hit_id}&workerId=BROWSERW1&turkSubmitTo=https://workersandbox.mturk.com"
    page.goto(
        f"{live_server.url}/mturk/hit/{hit.pk}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId={hit.provider_hit_id}"
    )
    expect(page.locator("#preview")).to_be_visible()
    expect(page.locator("#example svg")).to_have_count(2)  # a fixed example, no real item
    expect(page.locator("#task-form")).to_have_count(0)
    page.goto(f"{live_server.url}/mturk/hit/{hit.pk}/?{query}")
    for _ in range(3):
        page.keyboard.press("6")  # "None of the above" for each pair
    page.locator("#submit").click()
    expect(page.locator("#mturk-ok")).to_be_visible()
    assert posted and posted[0]["assignmentId"] == ["BROWSERASSIGNMENT1"]
    assert {k: v for k, v in posted[0].items() if k.startswith("q")} == {
        "q0": ["none"],
        "q1": ["none"],
        "q2": ["none"],
    }
    assignment = Assignment.objects.get(provider_assignment_id="BROWSERASSIGNMENT1")
    assert assignment.state == AssignmentState.SUBMITTED and assignment.answers.count() == 3
    assert not assignment.confirmed  # counts once synchronisation finds it at MTurk
    driver.remote[hit.pk] = {
        "BROWSERASSIGNMENT1": ("BROWSERW1", {"q0": "none", "q1": "none", "q2": "none"})
    }
    driver.sync_hit(hit, grant="BROWSERW1")
    assignment.refresh_from_db()
    assert assignment.confirmed
    driver.done()


def test_staff_cancel_a_stuck_job_from_the_dashboard(
    page, live_server, paired_run, django_user_model
):
    from annotation.models import Job, JobState

    django_user_model.objects.create_superuser("admin", "a@example.org", "pw-for-test")
    stuck = Job.objects.create(name="bison.pairing", run=paired_run, state=JobState.RUNNING)
    page.goto(f"{live_server.url}/admin/login/?next=/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "pw-for-test")
    page.click("input[type=submit]")
    row = page.locator("ul.jobs li", has_text=f"#{stuck.pk} bison.pairing")
    expect(row.locator("button.job-resume")).to_be_visible()
    row.locator("button.job-cancel").click()
    expect(page.get_by_text(f"Job {stuck.pk} cancelled.")).to_be_visible()
    assert Job.objects.get(pk=stuck.pk).state == JobState.CANCELLED
    expect(page.locator("ul.jobs li", has_text=f"#{stuck.pk} bison.pairing")).to_contain_text(
        "cancelled"
    )
