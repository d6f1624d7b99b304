"""Work of a worker who passes gold but disagrees with the other workers on the rest is held
for review before it is approved; careful workers' work is not."""

import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Review
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import reviews_hold_by_policy
from pipeline.simulate import Population, WorkerProfile

pytestmark = pytest.mark.django_db

CROWD = Population(
    "careful-and-gold-aware",
    (
        (0.8, WorkerProfile(accuracy=0.97, seconds_per_answer=5.0)),
        (0.2, WorkerProfile(behaviour="gold_aware", gold_accuracy=1.0, seconds_per_answer=5.0)),
    ),
)


def _judged(run, *, options):
    # Three workers per HIT, so every answer has others to agree with.
    shape = {"items_per_hit": 8, "assignments_per_hit": 3, "seed": 3, "options": options}
    batch = batch_publish(
        batch=batch_create(run=run, stage=EccvStage.JUDGMENT, provider="simulated", **shape)
    )
    # Five workers for the batch's 4 HITs x 3 assignments: each, the cheater too, answers at
    # least two HITs, so every worker has more than MIN_ANSWERS answers to compare (with ten,
    # whether the cheater got a second HIT was the turn order's draw).
    report = simulate_crowd(
        batch=batch,
        workers=5,
        profile=WorkerProfile(seconds_per_answer=5.0),
        population=CROWD,
        seed=3,
    )
    reviews_hold_by_policy(batch=batch)
    return batch, report


def _held_workers(batch):
    held = set()
    for review in Review.objects.filter(assignment__hit__batch=batch).select_related(
        "assignment__worker"
    ):
        if any(r.get("policy") == "disagrees_with_crowd" for r in review.reasons):
            held.add(review.assignment.worker.external_id)
    return held


def test_gold_aware_cheaters_are_held_and_careful_workers_are_not(proposed):
    batch, report = _judged(proposed, options={})
    cheaters = {w for w, p in report.team.items() if p.behaviour == "gold_aware"}
    held = _held_workers(batch)
    assert held and held <= cheaters


def test_the_agreement_hold_can_be_switched_off(proposed):
    batch, _ = _judged(proposed, options={"agreement_hold": False})
    assert not _held_workers(batch)
