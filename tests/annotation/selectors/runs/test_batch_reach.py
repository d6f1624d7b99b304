"""Who can fill a batch's open slots (`selectors/runs/batch_reach.py`), and the stage-3 setting that
relaxes image-disjointness for a trusted pool (issue 46: a small lab's BISON stage 3 stalled
in silence, 3 verifiers able to do 2 of 3 HITs)."""

from io import StringIO

import pytest
from django.core.management import call_command

from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Batch
from annotation.selectors.runs.batch_reach import DID_IT, IMAGE_SEEN, OTHER_POOL, batch_reach
from annotation.services.runs.batches import (
    batch_create,
    batch_discard,
    batch_publish,
    batch_warnings,
)
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.pools import pool_join
from annotation.services.work.submit import assignment_submit
from annotation.tasktypes.base import RELAX_IMAGES
from pipeline.errors import InputError
from tests.factories import invited, selection_done_factory


def stage3(run, *, relax: bool = False, per_hit: int = 2) -> Batch:
    """Stage 3 in HITs of two triples, `per_hit` verifiers each, for invited local workers."""
    return batch_create(
        run=run,
        stage=BisonStage.VERIFICATION,
        provider="local",
        items_per_hit=2,
        assignments_per_hit=per_hit,
        options={RELAX_IMAGES.name: True} if relax else {},
    )


def work_all(batch, workers) -> int:
    """Each worker in turn claims and answers every HIT the claim gives them; slots filled."""
    filled = 0
    for worker in workers:
        try:
            while (assignment := assignment_claim_next(batch=batch, worker=worker)) is not None:
                answers = {f"q{q.position}": "left" for q in assignment.hit.questions.all()}
                assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
                filled += 1
        except ServiceError:
            continue
    return filled


@pytest.fixture
def lab(paired_run):
    """Stage 2 done by simulated workers; three people of the lab invited for stage 3."""
    selection_done_factory(paired_run)
    people = [invited(paired_run, f"verifier-{n}").worker for n in range(3)]
    return paired_run, people


def test_the_draft_says_how_many_people_its_claim_rules_need_and_three_cannot_finish_it(lab):
    run, people = lab
    batch = stage3(run)
    draft = batch_reach(batch=batch)
    slots = batch.hits.count() * 2
    assert draft.members == 3 and draft.open_slots == slots
    # The estimate matches what the claim then does: three people, each taking all they may.
    batch_publish(batch=batch)
    filled = work_all(batch, people)
    assert filled == draft.members_fill < slots  # the small lab cannot finish it
    live = batch_reach(batch=batch)
    assert live.open_slots == slots - filled
    assert live.members_fill == 0 and live.more_people == draft.more_people > 0
    assert live.stuck_hits > 0 and live.stuck_slots == live.open_slots
    assert IMAGE_SEEN in live.why
    # The rule is the cause: relaxed, the same pool would do.
    assert live.more_people_relaxed == 0
    words = " ".join(live.sentences())
    assert f"open HIT{'s' if live.stuck_hits > 1 else ''} ({live.stuck_slots} slots)" in words
    assert "saw one of its images in another HIT" in words
    assert f"at least {live.more_people} more" in words
    assert "Relax image-disjointness" in words


def test_with_the_rule_relaxed_three_trusted_people_finish_stage_3(lab):
    run, people = lab
    batch = stage3(run, relax=True)
    assert batch_reach(batch=batch).more_people == 0
    batch_publish(batch=batch)
    assert work_all(batch, people) == batch.hits.count() * 2
    batch.refresh_from_db()
    assert batch.status == "completed"
    # Nobody took a HIT twice: with two per HIT, the third person took the rest.
    assert batch_reach(batch=batch).open_slots == 0


def test_the_relaxed_rule_is_a_batch_setting_of_image_disjoint_stages_only(lab):
    run, _ = lab
    with pytest.raises(InputError) as refused:
        batch_create(
            run=run,
            stage=BisonStage.SELECTION,
            provider="local",
            options={RELAX_IMAGES.name: True},
        )
    assert refused.value.field == RELAX_IMAGES.name
    kept = stage3(run)
    assert not any("relaxed" in w for w in batch_warnings(batch=kept))
    batch_discard(batch=kept)
    relaxed = stage3(run, relax=True)
    assert any("image-disjointness relaxed" in w for w in batch_warnings(batch=relaxed))


def test_people_of_another_stage_and_work_already_done_are_named(lab):
    run, people = lab
    stage2 = invited(run, "selector").worker
    pool_join(run=run, worker=stage2, stage=BisonStage.SELECTION)
    batch = batch_publish(batch=stage3(run, per_hit=4))
    held = assignment_claim_next(batch=batch, worker=people[0])
    reach = batch_reach(batch=batch)
    assert reach.barred[OTHER_POOL] == 1 and reach.members == 3
    # Four per HIT and three people: every HIT is short; the held one names who did it.
    assert reach.stuck_hits == batch.hits.count()
    assert reach.why[DID_IT] == (1, 1)
    assert held.hit.assignments.count() == 1
    words = " ".join(reach.sentences())
    assert "1 work in another stage's pool" in words
    assert "1 person did this HIT already (1 HIT)" in words


def test_the_batch_page_says_who_can_fill_it(lab, client, django_user_model):
    run, people = lab
    client.force_login(django_user_model.objects.create_superuser("boss", "b@x.org", "pw"))
    relaxed = stage3(run, relax=True)
    page = client.get(f"/batches/{relaxed.pk}/").content.decode()
    assert 'id="images-relaxed"' in page
    assert "different people under the claim rules" not in page  # three can do it
    batch_discard(batch=relaxed)
    batch = stage3(run)
    page = client.get(f"/batches/{batch.pk}/").content.decode()
    assert 'id="images-relaxed"' not in page
    assert "3 people in the stage&#x27;s pool may work on it" in page
    batch_publish(batch=batch)
    work_all(batch, people)
    page = client.get(f"/batches/{batch.pk}/").content.decode()
    assert 'id="reach"' in page
    assert "saw one of its images in another HIT" in page
    assert "more people" in page or "more person" in page


def test_batch_status_says_it_on_the_command_line(lab):
    run, people = lab
    batch = batch_publish(batch=stage3(run))
    work_all(batch, people)
    out = StringIO()
    call_command("batch_status", str(batch.pk), stdout=out)
    assert "saw one of its images in another HIT" in out.getvalue()
    assert f"at least {batch_reach(batch=batch).more_people} more" in out.getvalue()
