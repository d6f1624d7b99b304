"""The contract every crowd provider passes: local, simulated and MTurk (stubbed)."""

import pytest
from botocore.stub import ANY

from annotation.crowd.mturk.client import request_token
from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import AssignmentState, BatchStatus, Event, HitStatus
from annotation.providers import PROVIDERS, provider_for
from annotation.services.money.batch_extension import hit_add_assignments
from annotation.services.runs.batches import batch_create, batch_expire, batch_publish, batch_sync
from annotation.services.work.decisions import assignment_approve, assignment_reject
from annotation.services.work.worker_actions import worker_block, worker_bonus
from pipeline.errors import InputError
from tests.annotation.drivers import driver_for

# Long enough for every provider (Prolific asks at least 100 characters of a rejection).
FEEDBACK = (
    "Captions chosen at random: the chosen caption describes the left image as well as the "
    "right one in most of the questions."
)

pytestmark = pytest.mark.django_db


@pytest.fixture(params=sorted(PROVIDERS))
def driver(request, client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = driver_for(request.param, client)
    yield driver
    driver.done()


@pytest.fixture
def published(driver, paired_run):
    batch = batch_create(
        run=paired_run, stage=BisonStage.SELECTION, provider=driver.name, items_per_hit=3
    )
    assert batch.status == BatchStatus.DRAFT
    return driver.publish(batch)


def work(driver, batch, name):
    assignment = driver.take(batch, name)
    answers = {f"q{q.position}": "none" for q in assignment.hit.questions.all()}
    driver.submit(assignment, answers)
    assignment.refresh_from_db()
    return assignment


def test_publish_makes_hits_available_and_work_comes_back(driver, published):
    assert published.status == BatchStatus.PUBLISHED and published.published_at is not None
    assert Event.objects.filter(batch=published, action="batch.published").exists()
    assignment = work(driver, published, "w1")
    assert assignment.state == AssignmentState.SUBMITTED
    assert assignment.answers.count() == 3
    assert set(assignment.answers.values_list("label", flat=True)) == {"none"}


def test_publishing_twice_is_refused(published):
    with pytest.raises(ServiceError, match="not draft"):
        batch_publish(batch=published)


def test_approve_and_reject_write_events_and_the_hit_takes_another_worker(driver, published):
    a = work(driver, published, "w1")
    b = work(driver, published, "w2")
    driver.expect("ApproveAssignment", {}, {"AssignmentId": a.provider_assignment_id})
    assignment_approve(assignment=a)
    assignment_approve(assignment=a)  # idempotent: no second call, no second event
    assert Event.objects.filter(assignment=a, action="assignment.approved").count() == 1
    with pytest.raises(ServiceError, match="feedback"):
        assignment_reject(assignment=b, feedback="  ")
    driver.expect(
        "RejectAssignment",
        {},
        {
            "AssignmentId": b.provider_assignment_id,
            "RequesterFeedback": FEEDBACK,
        },
    )
    driver.expect(
        "CreateAdditionalAssignmentsForHIT",
        {},
        {
            "HITId": b.hit.provider_hit_id,
            "NumberOfAdditionalAssignments": 1,
            "UniqueRequestToken": request_token("redo", b.pk, "sandbox"),
        },
    )
    assignment_reject(assignment=b, feedback=FEEDBACK)
    b.refresh_from_db()
    assert b.state == AssignmentState.REJECTED and b.hit.status == HitStatus.OPEN
    event = Event.objects.get(assignment=b, action="assignment.rejected")
    assert event.data["feedback"] == FEEDBACK
    with pytest.raises(ServiceError):
        assignment_approve(assignment=b)
    third = driver.take(published, "w3")
    assert third.hit_id == b.hit_id  # the reopened HIT goes to a new worker
    assert driver.take(published, "w2") is None  # never back to the rejected worker


def test_expired_batches_offer_no_work(driver, published):
    for hit in published.hits.exclude(provider_hit_id=""):
        driver.expect("UpdateExpirationForHIT", {}, {"HITId": hit.provider_hit_id, "ExpireAt": ANY})
    batch_expire(batch=published)
    published.refresh_from_db()
    assert published.status == BatchStatus.EXPIRED
    assert not published.hits.filter(status=HitStatus.OPEN).exists()
    assert driver.take(published, "late") is None


def test_bonus_block_and_added_assignments_are_idempotent(driver, published):
    a = work(driver, published, "w1")
    driver.expect(
        "SendBonus",
        {},
        {
            "WorkerId": "w1",
            "AssignmentId": a.provider_assignment_id,
            "BonusAmount": "0.25",
            "Reason": ANY,  # "Careful work [ref …]": see crowd/mturk/test_provider_money.py
            "UniqueRequestToken": ANY,
        },
    )
    first = worker_bonus(assignment=a, amount="0.25", reason="Careful work")
    again = worker_bonus(assignment=a, amount="0.25", reason="Careful work")
    assert first.pk == again.pk and again.sent_at is not None
    assert Event.objects.filter(action="worker.bonus_sent").count() == 1
    driver.expect("CreateWorkerBlock", {}, {"WorkerId": "w1", "Reason": "spam"})
    worker_block(worker=a.worker, reason="spam")
    worker_block(worker=a.worker, reason="spam")
    assert Event.objects.filter(action="worker.blocked").count() == 1
    hit = a.hit
    driver.expect(
        "CreateAdditionalAssignmentsForHIT",
        {},
        {
            "HITId": hit.provider_hit_id,
            "NumberOfAdditionalAssignments": 2,
            "UniqueRequestToken": ANY,
        },
    )
    hit = hit_add_assignments(hit=hit, count=2)
    assert hit.capacity == published.assignments_per_hit + 2 and hit.status == HitStatus.OPEN


def test_sync_of_a_published_batch_changes_nothing_when_nothing_happened(driver, published):
    for hit in published.hits.exclude(provider_hit_id="").order_by("position"):
        driver.expect(
            "ListAssignmentsForHIT",
            {"Assignments": [], "NumResults": 0},
            {"HITId": hit.provider_hit_id, "MaxResults": 100, "AssignmentStatuses": ANY},
        )
    assert batch_sync(batch=published) == 0


def test_unknown_provider_is_a_clear_error():
    with pytest.raises(InputError, match="unknown crowd provider 'nope'"):
        provider_for("nope")


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_every_column_holds_the_providers_longest_documented_ids(name, paired_run):
    """Each provider's ids at the longest its platform's reference allows, stored in every
    column that holds them (PostgreSQL refuses a value longer than its column)."""
    import random

    from django.utils import timezone

    from annotation.models import (
        Assignment,
        BlockQualification,
        PoolQualification,
        RemoteCall,
        Worker,
    )

    shapes = provider_for(name).id_shapes
    rng = random.Random(name)

    def longest(length):
        return "".join(rng.choice(shapes.alphabet) for _ in range(length)) if length else ""

    if name in ("prolific", "mturk", "panel"):  # platforms that make ids: each is declared
        assert shapes.worker and shapes.reference
    batch = batch_create(run=paired_run, stage=BisonStage.SELECTION, provider=name)
    batch.provider_hit_type_id = longest(shapes.hit_type)
    batch.save(update_fields=["provider_hit_type_id"])
    hit = batch.hits.first()
    hit.provider_hit_id = longest(shapes.hit)
    hit.save(update_fields=["provider_hit_id"])
    worker = Worker.objects.create(provider=name, external_id=longest(shapes.worker) or "w")
    assignment = Assignment.objects.create(
        hit=hit,
        worker=worker,
        provider_assignment_id=longest(shapes.assignment),
        accepted_at=timezone.now(),
    )
    BlockQualification.objects.create(
        provider=name,
        environment=longest(shapes.environment),
        qualification_id=longest(shapes.qualification),
    )
    PoolQualification.objects.create(
        run=paired_run,
        stage=BisonStage.SELECTION,
        provider=name,
        environment=longest(shapes.environment),
        qualification_id=longest(shapes.qualification),
    )
    widest = max(
        shapes.worker, shapes.assignment, shapes.hit, shapes.hit_type, shapes.qualification
    )
    RemoteCall.objects.create(
        provider=name, operation="x", key=f"{name}|x", remote_id=longest(widest)
    )
    assignment.refresh_from_db()
    assert len(assignment.provider_assignment_id) == shapes.assignment
    assert len(Worker.objects.get(pk=worker.pk).external_id) == max(1, shapes.worker)
