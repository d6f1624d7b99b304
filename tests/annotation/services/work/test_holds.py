"""Idle holds where claims start unconfirmed (issue 47): a claim nobody answered on, under an
id nobody confirmed, yields its slot past its short hold to a claimer who finds no other; a
worker who answered (a draft, submitted work) keeps their task; confirmed claims never yield."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import AssignmentState, Event
from annotation.providers import PROVIDERS
from annotation.providers.base import ServerSideProvider
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.claim import assignment_claim_next, claim_wait_seconds
from annotation.services.work.drafts import draft_save
from annotation.services.work.holds import TAKEN_OVER, idle_hold_seconds
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create

pytestmark = pytest.mark.django_db

NAME = "holds-test"


class PendingProvider(ServerSideProvider):
    name = NAME
    claims_unconfirmed = True


@pytest.fixture(autouse=True)
def pending_provider(monkeypatch):
    monkeypatch.setitem(PROVIDERS, NAME, PendingProvider())


def tasks(run, n=1, provider=NAME):
    batch = batch_create(
        run=run,
        stage=BisonStage.SELECTION,
        provider=provider,
        items_per_hit=1,
        assignments_per_hit=1,
        limit=n,
    )
    assert batch.hits.count() == n
    return batch_publish(batch=batch)


def worker(name, provider=NAME):
    return worker_get_or_create(provider=provider, external_id=name)


def answers_of(assignment):
    return {f"q{q.position}": "none" for q in assignment.hit.questions.all()}


def test_an_idle_claim_past_its_hold_goes_to_the_next_claimer(paired_run):
    batch = tasks(paired_run)
    now = timezone.now()
    old = now - timedelta(seconds=idle_hold_seconds(batch) + 1)
    idle = assignment_claim_next(batch=batch, worker=worker("idle"), now=old)
    taken = assignment_claim_next(batch=batch, worker=worker("next"), now=now)
    assert taken is not None and taken.hit_id == idle.hit_id
    idle.refresh_from_db()
    assert idle.state == AssignmentState.ABANDONED
    event = Event.objects.get(action="assignment.abandoned", assignment=idle)
    assert event.data["reason"] == TAKEN_OVER and event.data["taken_by"] == taken.worker_id
    # The one who lost it cannot submit on it, and the one who took it can.
    with pytest.raises(Exception, match="abandoned"):
        assignment_submit(assignment_id=idle.pk, worker=idle.worker, answers=answers_of(idle))
    assignment_submit(assignment_id=taken.pk, worker=taken.worker, answers=answers_of(taken))


def test_a_young_idle_claim_keeps_its_slot_and_says_when_it_may_go(paired_run):
    batch = tasks(paired_run)
    now = timezone.now()
    assignment_claim_next(batch=batch, worker=worker("idle"), now=now - timedelta(seconds=10))
    other = worker("next")
    assert assignment_claim_next(batch=batch, worker=other, now=now) is None
    assert claim_wait_seconds(batch=batch, worker=other, now=now) == idle_hold_seconds(batch) - 9


def test_a_claim_with_an_answer_in_progress_is_never_taken_over(paired_run):
    batch = tasks(paired_run)
    now = timezone.now()
    old = now - timedelta(seconds=idle_hold_seconds(batch) + 1)
    working = assignment_claim_next(batch=batch, worker=worker("working"), now=old)
    draft_save(assignment_id=working.pk, worker_id=working.worker_id, answers={"q0": ["none"]})
    other = worker("next")
    assert assignment_claim_next(batch=batch, worker=other, now=now) is None
    assert claim_wait_seconds(batch=batch, worker=other, now=now) is None  # truly no work
    working.refresh_from_db()
    assert working.state == AssignmentState.ACCEPTED


def test_a_worker_with_submitted_work_keeps_their_next_task(paired_run):
    batch = tasks(paired_run, n=2)
    now = timezone.now()
    old = now - timedelta(seconds=idle_hold_seconds(batch) + 10)
    alice = worker("alice")
    first = assignment_claim_next(batch=batch, worker=alice, now=old)
    assignment_submit(assignment_id=first.pk, worker=alice, answers=answers_of(first))
    second = assignment_claim_next(batch=batch, worker=alice, now=old)
    assert second is not None and second.hit_id != first.hit_id
    assert assignment_claim_next(batch=batch, worker=worker("next"), now=now) is None
    second.refresh_from_db()
    assert second.state == AssignmentState.ACCEPTED


def test_confirmed_claims_never_yield(paired_run):
    batch = tasks(paired_run, provider="local")
    now = timezone.now()
    old = now - timedelta(seconds=idle_hold_seconds(batch) + 1)
    held = assignment_claim_next(batch=batch, worker=worker("idle", "local"), now=old)
    other = worker("next", "local")
    assert assignment_claim_next(batch=batch, worker=other, now=now) is None
    assert claim_wait_seconds(batch=batch, worker=other, now=now) is None
    held.refresh_from_db()
    assert held.state == AssignmentState.ACCEPTED
