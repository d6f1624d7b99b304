"""Issue 46 in headless Chromium: no answer is ever lost. A worker answers half a HIT, closes
the browser, signs in again by their link in a new one and finds their answers on the page;
an ended session's Submit keeps them too; an uncertain answer's follow-ups come back after a
reload; and the work counts once, from the submit. Screenshots go to CROWDVL_SHOTS when set."""

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import expect

from annotation.crowd.local.invitations import invitations_create
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Answer, Assignment, AssignmentDraft
from annotation.selectors.counting import counted
from annotation.services.runs.batches import batch_create, batch_publish
from tests.annotation.pages.work.test_shell_browser import browser, shot  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def selection(run, per_hit):
    return batch_publish(
        batch=batch_create(
            run=run, stage=BisonStage.SELECTION, provider="local", items_per_hit=per_hit
        )
    )


def first_visit(tab, live_server, batch, token):
    """The invitation link's first visit: consent, the batch, Start."""
    tab.goto(f"{live_server.url}/join/{token}/")
    tab.click("#consent")
    tab.click(f"#batches a[href='/work/{batch.pk}/']")
    tab.click("#start")
    tab.wait_for_selector("#task-form")


def back_by_the_link(tab, live_server, token):
    """Signing in again by the invitation link, and on with the task in progress."""
    tab.goto(f"{live_server.url}/join/{token}/")
    expect(tab.locator("#open-tasks a")).to_have_count(1)
    shot(tab, "join-task-in-progress")
    tab.click("#open-tasks a")
    tab.wait_for_selector("#task-form")


def counted_once(worker_label, questions):
    """Exactly one of the worker's assignments counts (the submit led on to their next task,
    still open), with one answer per question, and no draft is left."""
    mine = Assignment.objects.filter(worker__invitations__label=worker_label)
    assert mine.filter(counted()).count() == 1
    assert Answer.objects.count() == questions
    assert Answer.objects.filter(assignment__in=mine.filter(counted())).count() == questions
    assert not AssignmentDraft.objects.exists()
    return {a.question.position: a.choice for a in Answer.objects.select_related("question")}


def test_half_a_hit_survives_a_closed_browser(browser, live_server, paired_run):  # noqa: F811
    batch = selection(paired_run, 4)
    token = invitations_create(run=paired_run, labels=["closer"])[0].token
    first = browser.new_context()
    tab = first.new_page()
    first_visit(tab, live_server, batch, token)
    tab.keyboard.press("2")  # question 1: its second caption, by key
    tab.locator("fieldset#q1 label").first.click()  # question 2: its first caption, by mouse
    expect(tab.locator("#progress")).to_have_text("2 / 4 answered")
    expect(tab.locator("#draft-status")).to_have_text("Answers saved")
    first.close()  # the browser is closed mid-task

    second = browser.new_context()  # a new browser: no cookie, no storage
    tab = second.new_page()
    back_by_the_link(tab, live_server, token)
    expect(tab.locator("#draft-status")).to_have_text("Your answers so far are back")
    expect(tab.locator("#progress")).to_have_text("2 / 4 answered")
    expect(tab.locator("fieldset#q0 input[type=radio]").nth(1)).to_be_checked()
    expect(tab.locator("fieldset#q1 input[type=radio]").first).to_be_checked()
    shot(tab, "task-answers-restored")
    tab.keyboard.press("6")  # the first unanswered question is current: "None of the above"
    tab.keyboard.press("6")
    expect(tab.locator("#submit")).to_be_enabled()
    tab.locator("#submit").click()
    expect(tab.locator(".messages")).to_contain_text("answers were saved")
    second.close()
    choices = counted_once("closer", 4)
    assert choices[2] == choices[3] == "none" and "none" not in (choices[0], choices[1])


def test_an_ended_sessions_submit_loses_no_answer(browser, live_server, paired_run):  # noqa: F811
    batch = selection(paired_run, 3)
    token = invitations_create(run=paired_run, labels=["expired"])[0].token
    context = browser.new_context()
    tab = context.new_page()
    first_visit(tab, live_server, batch, token)
    tab.keyboard.press("6")
    tab.keyboard.press("6")
    expect(tab.locator("#draft-status")).to_have_text("Answers saved")
    Session.objects.all().delete()  # the session expires while the page is open
    tab.keyboard.press("1")  # the last answer: its save is refused, the browser keeps it
    expect(tab.locator("#draft-status")).to_contain_text("your session has ended")
    tab.keyboard.press("Enter")  # Submit
    expect(tab.locator("#reason")).to_contain_text("Your session has ended")
    shot(tab, "task-session-ended")
    assert not Answer.objects.exists()
    back_by_the_link(tab, live_server, token)
    # Every answer is back: the two the server kept and the last, kept in this browser.
    expect(tab.locator("#progress")).to_have_text("3 / 3 answered")
    expect(tab.locator("#draft-status")).to_have_text("Answers saved")  # now on the server
    tab.keyboard.press("Enter")
    expect(tab.locator(".messages")).to_contain_text("answers were saved")
    context.close()
    choices = counted_once("expired", 3)
    assert choices[0] == choices[1] == "none" and choices[2] != "none"


def test_an_uncertain_answers_follow_ups_come_back(browser, live_server, proposed):  # noqa: F811
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="local", items_per_hit=6
        )
    )
    token = invitations_create(run=proposed, labels=["judge"])[0].token
    context = browser.new_context()
    tab = context.new_page()
    first_visit(tab, live_server, batch, token)
    total = tab.locator("fieldset.question").count()
    tab.keyboard.press("2")  # "Partially YES, but": its follow-ups open
    tab.keyboard.press("3")  # "describes the main concepts wrongly", by key
    tab.locator("fieldset#q0 input[value=color]").check()
    expect(tab.locator("#progress")).to_have_text(f"1 / {total} answered")
    expect(tab.locator("#draft-status")).to_have_text("Answers saved")
    tab.reload()
    expect(tab.locator("#progress")).to_have_text(f"1 / {total} answered")
    expect(tab.locator("fieldset#q0 .error-types")).to_be_visible()
    for value in ("partially_yes", "wrong_description", "color"):
        expect(tab.locator(f"fieldset#q0 input[value={value}]")).to_be_checked()
    for n in range(1, total):
        tab.locator(f"fieldset#q{n} input[value=yes]").check()
    tab.locator("#submit").click()
    expect(tab.locator(".messages")).to_contain_text("answers were saved")
    context.close()
    answer = Answer.objects.get(question__position=0)
    assert answer.details == {"reasons": ["wrong_description"], "errors": ["color"]}
    assert not AssignmentDraft.objects.exists()
