"""The worker's page inside MTurk's frame (annotation/crowd/mturk/views.py): the preview, answers
stored then posted to MTurk, a forged form refused."""

import pytest

from annotation.models import Answer, Assignment, AssignmentState, PoolMembership
from tests.annotation.crowd.mturk.test_publish import published_batch
from tests.annotation.drivers import SUBMIT_TO

pytestmark = pytest.mark.django_db


def test_preview_shows_instructions_and_an_example_without_taking_answers(mt, draft, client):
    batch = published_batch(mt, draft)
    hit = batch.hits.order_by("position").first()
    response = client.get(
        f"/mturk/hit/{hit.pk}/",
        {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": hit.provider_hit_id},
    )
    html = response.content.decode()
    assert response.status_code == 200 and 'id="preview"' in html
    assert 'id="instructions"' in html and 'id="example"' in html
    assert 'id="task-form"' not in html  # the HIT's questions only once it is accepted
    assert "X-Frame-Options" not in response.headers  # MTurk frames this page
    assert not Assignment.objects.exists()


def test_worker_page_stores_answers_then_posts_them_to_mturk(mt, draft, client):
    batch = published_batch(mt, draft)
    assignment = mt.take(batch, "WORKER1")
    assert not Assignment.objects.exists()  # opening the page wrote nothing
    # The page refuses a turkSubmitTo that is not MTurk's.
    hit = assignment.hit
    bad = client.get(
        f"/mturk/hit/{hit.pk}/",
        {"assignmentId": "A2", "workerId": "W2", "turkSubmitTo": "https://evil.example"},
    )
    assert bad.status_code == 400
    answers = {f"q{q.position}": "none" for q in hit.questions.all()}
    response = mt.post(assignment, answers)
    assert b"https://workersandbox.mturk.com/mturk/externalSubmit" in response.content
    stored = Assignment.objects.get()
    assert not stored.confirmed and stored.answers.count() == 2
    assert not PoolMembership.objects.exists()  # unconfirmed work grants no pool
    mt.open[assignment.provider_assignment_id] = (hit.pk, "WORKER1", "")
    mt.submit_confirm(assignment, answers)
    stored.refresh_from_db()
    assert stored.confirmed and stored.state == AssignmentState.SUBMITTED
    assert PoolMembership.objects.get(worker=stored.worker).granted_at is not None
    # Reloading after submitting shows the MTurk submit form again, nothing stored twice.
    again = client.get(
        f"/mturk/hit/{hit.pk}/",
        {
            "assignmentId": assignment.provider_assignment_id,
            "workerId": "WORKER1",
            "hitId": hit.provider_hit_id,
            "turkSubmitTo": SUBMIT_TO,
        },
    )
    assert b"https://workersandbox.mturk.com/mturk/externalSubmit" in again.content
    assert Answer.objects.filter(assignment=stored).count() == 2


def test_a_forged_form_is_refused(mt, draft, client):
    batch = published_batch(mt, draft)
    assignment = mt.take(batch, "WORKER1")
    response = client.post(
        f"/mturk/hit/{assignment.hit.pk}/",
        {
            "q0": "none",
            "q1": "none",
            "assignmentId": assignment.provider_assignment_id,
            "turkSubmitTo": SUBMIT_TO,
            "token": "forged",
        },
    )
    assert response.status_code == 400 and not Answer.objects.exists()
