import pytest

from annotation.errors import AnswerError, NotAssignmentHolder, PoolConflict, ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Answer, Assignment, AssignmentState, HitStatus, PoolMembership
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


@pytest.fixture
def selection(paired_run):
    return batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=3
        )
    )


def worker(name):
    return worker_get_or_create(provider="local", external_id=name)


def first_captions(assignment):
    return {f"q{q.position}": "c0" for q in assignment.hit.questions.all()}


def test_claim_submit_and_never_the_same_hit_twice(selection):
    alice = worker("alice")
    first = assignment_claim_next(batch=selection, worker=alice)
    assert assignment_claim_next(batch=selection, worker=alice) == first  # resumes, no new slot
    result = assignment_submit(assignment_id=first.pk, worker=alice, answers=first_captions(first))
    assert result.created and Answer.objects.filter(assignment=first).count() == 3
    first.refresh_from_db()
    assert first.state == AssignmentState.SUBMITTED and first.hit.status == HitStatus.COMPLETE
    second = assignment_claim_next(batch=selection, worker=alice)
    assert second.hit_id != first.hit_id
    assignment_submit(assignment_id=second.pk, worker=alice, answers=first_captions(second))
    assert assignment_claim_next(batch=selection, worker=alice) is None
    selection.refresh_from_db()
    assert selection.status == "completed"


def test_a_hit_takes_only_its_number_of_workers(paired_run):
    selection_done_factory(paired_run)
    verification = batch_publish(
        batch=batch_create(
            run=paired_run,
            stage=BisonStage.VERIFICATION,
            provider="local",
            items_per_hit=100,
            limit=1,  # one HIT (stage 3 packs HITs image-disjoint: the toy run's need two)
        )
    )
    assert verification.hits.count() == 1
    a = assignment_claim_next(batch=verification, worker=worker("v1"))
    b = assignment_claim_next(batch=verification, worker=worker("v2"))
    assert a and b and a.hit_id == b.hit_id
    assert assignment_claim_next(batch=verification, worker=worker("v3")) is None


def test_stage_pools_are_disjoint_at_claim_and_at_submit(paired_run):
    selection_done_factory(paired_run)  # simulated workers are now in the stage-2 pool
    stage2_worker = PoolMembership.objects.filter(stage=BisonStage.SELECTION).first().worker
    verification = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.VERIFICATION, provider="local")
    )
    with pytest.raises(PoolConflict, match="different people"):
        assignment_claim_next(batch=verification, worker=stage2_worker)
    verifier = worker("verifier")
    assignment = assignment_claim_next(batch=verification, worker=verifier)
    # Even if the membership changed after the claim, the submission is checked again.
    PoolMembership.objects.filter(worker=verifier).update(stage=BisonStage.SELECTION)
    answers = {f"q{q.position}": "left" for q in assignment.hit.questions.all()}
    with pytest.raises(PoolConflict):
        assignment_submit(assignment_id=assignment.pk, worker=verifier, answers=answers)
    assert not Answer.objects.filter(assignment=assignment).exists()


def test_bad_submissions_are_refused_and_write_nothing(selection):
    alice = worker("alice")
    assignment = assignment_claim_next(batch=selection, worker=alice)
    good = first_captions(assignment)

    with pytest.raises(AnswerError, match="not answered") as err:
        assignment_submit(assignment_id=assignment.pk, worker=alice, answers={"q0": good["q0"]})
    assert "q1" in err.value.field
    with pytest.raises(AnswerError, match="not in this HIT") as err:
        assignment_submit(assignment_id=assignment.pk, worker=alice, answers={**good, "q7": "none"})
    assert err.value.field == "q7"
    other_image_caption = str(
        assignment.hit.questions.get(position=0).item.negative.captions.first().coco_id
    )
    with pytest.raises(AnswerError, match="not one of this pair's captions") as err:
        assignment_submit(
            assignment_id=assignment.pk, worker=alice, answers={**good, "q0": other_image_caption}
        )
    assert err.value.field == "caption" and "question 1" in err.value.record
    with pytest.raises(NotAssignmentHolder):
        assignment_submit(assignment_id=assignment.pk, worker=worker("mallory"), answers=good)
    assert Answer.objects.count() == 0
    assert Assignment.objects.get(pk=assignment.pk).state == AssignmentState.ACCEPTED


def test_a_second_submission_is_idempotent(selection):
    alice = worker("alice")
    assignment = assignment_claim_next(batch=selection, worker=alice)
    answers = first_captions(assignment)
    assert assignment_submit(assignment_id=assignment.pk, worker=alice, answers=answers).created
    again = assignment_submit(assignment_id=assignment.pk, worker=alice, answers=answers)
    assert not again.created
    assert Answer.objects.filter(assignment=assignment).count() == 3
    changed = {**answers, "q0": "none"}
    with pytest.raises(ServiceError, match="different answers"):
        assignment_submit(assignment_id=assignment.pk, worker=alice, answers=changed)
    assert Answer.objects.filter(assignment=assignment).count() == 3


def test_blocked_workers_get_no_work(selection):
    bob = worker("bob")
    bob.blocked = True
    bob.save()
    with pytest.raises(ServiceError, match="blocked"):
        assignment_claim_next(batch=selection, worker=bob)


def test_verification_answers_are_read_relative_to_the_hidden_side(paired_run):
    selection_done_factory(paired_run)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="local", items_per_hit=100
        )
    )
    verifier = worker("verifier")
    assignment = assignment_claim_next(batch=batch, worker=verifier)
    questions = list(assignment.hit.questions.all())
    answers = {f"q{q.position}": ("right" if q.swapped else "left") for q in questions}
    assignment_submit(assignment_id=assignment.pk, worker=verifier, answers=answers)
    assert set(Answer.objects.filter(assignment=assignment).values_list("label", flat=True)) == {
        "positive"
    }
