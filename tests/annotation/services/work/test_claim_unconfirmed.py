"""A provider whose claims start unconfirmed (`CrowdProvider.claims_unconfirmed`: work made on
this server that counts once the provider confirms it, e.g. a panel's list of approved
participants). Its claims keep every claim rule of local work (slots, claim times, pools);
its work counts only after `assignment_confirm`."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.errors import PoolConflict, TooLate
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import AssignmentState, BatchStatus, HitStatus, PoolMembership
from annotation.providers import PROVIDERS
from annotation.providers.base import ServerSideProvider
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.confirm import assignment_confirm
from annotation.services.work.reviews import assignments_auto_approve
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db

NAME = "pending-test"


class PendingProvider(ServerSideProvider):
    name = NAME
    claims_unconfirmed = True


@pytest.fixture(autouse=True)
def pending_provider(monkeypatch):
    monkeypatch.setitem(PROVIDERS, NAME, PendingProvider())


def one_hit(run, stage=BisonStage.SELECTION, **options):
    if stage == BisonStage.VERIFICATION:  # image-disjoint HITs: the toy run's triples need two
        options.setdefault("limit", 1)
    batch = batch_create(run=run, stage=stage, provider=NAME, items_per_hit=100, **options)
    assert batch.hits.count() == 1
    return batch_publish(batch=batch)


def worker(name):
    return worker_get_or_create(provider=NAME, external_id=name)


def answers_of(assignment):
    return {f"q{q.position}": "none" for q in assignment.hit.questions.all()}


def test_claims_start_unconfirmed_hold_their_slot_and_count_once_confirmed(paired_run):
    batch = one_hit(paired_run)
    assert batch.assignments_per_hit == 1
    alice, bob = worker("alice"), worker("bob")
    first = assignment_claim_next(batch=batch, worker=alice)
    assert first is not None and first.confirmed is False
    assert assignment_claim_next(batch=batch, worker=alice) == first  # resumed, no new row
    assert assignment_claim_next(batch=batch, worker=bob) is None  # the claim holds the slot
    assignment_submit(assignment_id=first.pk, worker=alice, answers=answers_of(first))
    first.refresh_from_db()
    assert first.state == AssignmentState.SUBMITTED and not first.confirmed
    # Waiting for confirmation: it does not count, and it keeps its slot.
    assert first.hit.status == HitStatus.OPEN
    assert assignment_claim_next(batch=batch, worker=bob) is None
    assert assignment_claim_next(batch=batch, worker=alice) is None  # never the same HIT twice
    assignment_confirm(assignment=first, source="test")
    first.refresh_from_db()
    batch.refresh_from_db()
    assert first.confirmed and first.hit.status == HitStatus.COMPLETE
    assert batch.status == BatchStatus.COMPLETED


def test_an_idle_first_claim_lets_its_slot_go_and_comes_back_too_late(paired_run):
    batch = one_hit(paired_run, options={"first_claim_seconds": 60})
    alice, bob = worker("alice"), worker("bob")
    start = timezone.now()
    idle = assignment_claim_next(batch=batch, worker=alice, now=start - timedelta(seconds=120))
    taken = assignment_claim_next(batch=batch, worker=bob, now=start)
    assert taken is not None and taken.hit_id == idle.hit_id
    assignment_submit(assignment_id=taken.pk, worker=bob, answers=answers_of(taken))
    with pytest.raises(TooLate):  # bob's waiting work holds the only slot
        assignment_submit(assignment_id=idle.pk, worker=alice, answers=answers_of(idle))


def test_work_past_the_assignment_duration_is_refused(paired_run):
    batch = one_hit(paired_run)
    alice = worker("alice")
    late = timezone.now() - timedelta(seconds=batch.assignment_duration_seconds + 60)
    claim = assignment_claim_next(batch=batch, worker=alice, now=late)
    with pytest.raises(TooLate):
        assignment_submit(assignment_id=claim.pk, worker=alice, answers=answers_of(claim))


def test_pools_apply_at_the_claim(paired_run):
    selection_done_factory(paired_run)
    verification = one_hit(paired_run, stage=BisonStage.VERIFICATION, assignments_per_hit=2)
    carol = worker("carol")
    PoolMembership.objects.create(run=paired_run, worker=carol, stage=BisonStage.SELECTION)
    with pytest.raises(PoolConflict, match="different people"):
        assignment_claim_next(batch=verification, worker=carol)


def test_an_unconfirmed_claim_bars_no_one_from_another_stage_until_confirmed(paired_run):
    """Issue 25: the id of an unconfirmed claim is anyone's to type (a panel's study link). A
    stage-2 claim under VICTIM's id puts VICTIM in no pool: they can still take stage 3. Once
    the provider confirms the stage-2 work, they are barred and their stage-3 work is out."""
    from annotation.flow_registry import task_type_for
    from annotation.flows.bison.selectors import bison_triples_with_votes

    selection = one_hit(paired_run, assignments_per_hit=2)
    selector, victim = worker("selector"), worker("victim")
    real = assignment_claim_next(batch=selection, worker=selector)
    task = task_type_for(BisonStage.SELECTION)
    answers = {
        f"q{q.position}": task.worker_choices(question=q)[0]  # a caption, not "none"
        for q in real.hit.questions.all()
    }
    assignment_submit(assignment_id=real.pk, worker=selector, answers=answers)
    assignment_confirm(assignment=real, source="test")
    forged = assignment_claim_next(batch=selection, worker=victim)
    assignment_submit(assignment_id=forged.pk, worker=victim, answers=answers_of(forged))
    assert not PoolMembership.objects.filter(worker=victim).exists()
    verification = one_hit(paired_run, stage=BisonStage.VERIFICATION, assignments_per_hit=2)
    taken = assignment_claim_next(batch=verification, worker=victim)
    assert taken is not None and not taken.confirmed
    sides = {f"q{q.position}": "right" if q.swapped else "left" for q in taken.hit.questions.all()}
    assignment_submit(assignment_id=taken.pk, worker=victim, answers=sides)
    assignment_confirm(assignment=taken, source="test")
    shown = set(taken.hit.questions.values_list("item_id", flat=True))
    votes = bison_triples_with_votes(run=paired_run)
    assert {t.votes for t in votes if t.pk in shown} == {1}
    assert PoolMembership.objects.get(worker=victim).stage == BisonStage.VERIFICATION
    # The provider confirms the stage-2 work after all: VICTIM did both stages.
    assignment_confirm(assignment=forged, source="test")
    taken.refresh_from_db()
    assert taken.excluded
    votes = bison_triples_with_votes(run=paired_run)
    assert {t.votes for t in votes if t.pk in shown} == {0}
    assert PoolMembership.objects.get(worker=victim).stage == BisonStage.SELECTION
    with pytest.raises(PoolConflict, match="different people"):
        assignment_claim_next(batch=verification, worker=victim)


def test_auto_approval_waits_for_the_confirmation(paired_run):
    batch = one_hit(paired_run, auto_approval_delay_seconds=0)
    alice = worker("alice")
    claim = assignment_claim_next(batch=batch, worker=alice)
    assignment_submit(assignment_id=claim.pk, worker=alice, answers=answers_of(claim))
    assert assignments_auto_approve(batch=batch) == 0
    assignment_confirm(assignment=claim, source="test")
    assert assignments_auto_approve(batch=batch) == 1
    claim.refresh_from_db()
    assert claim.state == AssignmentState.APPROVED
