"""The contract every crowd provider passes (the MTurk provider will join the parameter list)."""

import pytest

from annotation.crowd import PROVIDERS, provider_for
from annotation.errors import ServiceError
from annotation.models import AssignmentState, BatchStatus, Event, HitStatus, Stage
from annotation.services.assignments import (
    assignment_approve,
    assignment_claim_next,
    assignment_reject,
    assignment_submit,
    worker_get_or_create,
)
from annotation.services.batches import batch_create, batch_expire, batch_publish
from pipeline.errors import InputError

pytestmark = pytest.mark.django_db


@pytest.fixture(params=sorted(PROVIDERS))
def published(request, paired_run):
    batch = batch_create(
        run=paired_run, stage=Stage.BISON_SELECTION, provider=request.param, items_per_hit=3
    )
    assert batch.status == BatchStatus.DRAFT
    return batch_publish(batch=batch)


def submit_none(batch, name):
    worker = worker_get_or_create(provider=batch.provider, external_id=name)
    assignment = assignment_claim_next(batch=batch, worker=worker)
    answers = {f"q{q.position}": "none" for q in assignment.hit.questions.all()}
    assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
    assignment.refresh_from_db()
    return assignment


def test_publish_makes_hits_claimable(published):
    assert published.status == BatchStatus.PUBLISHED and published.published_at is not None
    assert Event.objects.filter(batch=published, action="batch.published").exists()
    assignment = submit_none(published, "w1")
    assert assignment.state == AssignmentState.SUBMITTED


def test_publishing_twice_is_refused(published):
    with pytest.raises(ServiceError, match="not draft"):
        batch_publish(batch=published)


def test_approve_and_reject_write_events_and_reject_reopens_the_hit(published):
    a = submit_none(published, "w1")
    b = submit_none(published, "w2")
    assignment_approve(assignment=a)
    assignment_approve(assignment=a)  # idempotent
    assert Event.objects.filter(assignment=a, action="assignment.approved").count() == 1
    with pytest.raises(ServiceError, match="feedback"):
        assignment_reject(assignment=b, feedback="  ")
    assignment_reject(assignment=b, feedback="Captions chosen at random.")
    b.refresh_from_db()
    assert b.state == AssignmentState.REJECTED and b.hit.status == HitStatus.OPEN
    event = Event.objects.get(assignment=b, action="assignment.rejected")
    assert event.data["feedback"] == "Captions chosen at random."
    with pytest.raises(ServiceError):
        assignment_approve(assignment=b)
    # The reopened HIT goes to another worker, never back to the rejected one.
    c_worker = worker_get_or_create(provider=published.provider, external_id="w3")
    assert assignment_claim_next(batch=published, worker=c_worker).hit_id == b.hit_id


def test_expired_batches_offer_no_work(published):
    batch_expire(batch=published)
    published.refresh_from_db()
    assert published.status == BatchStatus.EXPIRED
    assert not published.hits.filter(status=HitStatus.OPEN).exists()
    worker = worker_get_or_create(provider=published.provider, external_id="late")
    assert assignment_claim_next(batch=published, worker=worker) is None


def test_sync_of_a_server_side_provider_changes_nothing(published):
    assert provider_for(published.provider).sync(batch=published) == 0


def test_unknown_provider_is_a_clear_error():
    with pytest.raises(InputError, match="unknown crowd provider 'nope'"):
        provider_for("nope")
