"""A worker's gold record holds all their waiting work (issue 47): a gold miss used to hold
only the HIT it was in, so a worker who missed gold in a third of their HITs (the lookup
cheater of `services/work/test_reviews_lookup_attacks.py`) kept the rest counted."""

from __future__ import annotations

import pytest

from annotation.flows.quality.vocabulary import QualityStage
from annotation.models import GOLD_KINDS, Answer, Review
from annotation.selectors.counting import counted_reviewed
from annotation.selectors.reviews.gold_record import MIN_GOLD, POLICY
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import reviews_hold_by_policy
from tests.annotation.held_reviews import answer_all
from tests.annotation.services.runs.test_gold_attacks import quality_setup

pytestmark = pytest.mark.django_db

GOLD_ANSWER = {"gold_positive": "yes", "gold_negative": "no"}


def agreed(question) -> str:  # type: ignore[no-untyped-def]
    """Every rater's answer on a real item (so items are established and workers agree)."""
    return "yes" if question.item.pk % 2 else "no"


def _second_batch(tmp_path, hits: int):  # type: ignore[no-untyped-def]
    run, _ = quality_setup(tmp_path)
    first = batch_publish(
        batch=batch_create(
            run=run,
            stage=QualityStage.BINARY,
            provider="local",
            items_per_hit=10,
            assignments_per_hit=3,
            limit=60,
        )
    )
    for name in ("rater-a", "rater-b", "rater-c"):
        answer_all(first, name, agreed)
    return batch_publish(
        batch=batch_create(
            run=run,
            stage=QualityStage.BINARY,
            provider="local",
            items_per_hit=5,
            assignments_per_hit=3,
            limit=5 * hits,
        )
    )


def _missing_every(n: int):  # type: ignore[no-untyped-def]
    """Right on real items; on gold, wrong in every n-th gold question it meets."""
    met = [0]

    def pick(question) -> str:  # type: ignore[no-untyped-def]
        want = GOLD_ANSWER.get(question.item.kind)
        if want is None:
            return agreed(question)
        met[0] += 1
        wrong = met[0] % n == 0
        return ({"yes", "no"} - {want}).pop() if wrong else want

    return pick


def test_a_worker_failing_gold_too_often_is_held_in_every_hit_and_careful_ones_are_not(tmp_path):
    batch = _second_batch(tmp_path, hits=20)
    lookup = answer_all(batch, "misses-every-second", _missing_every(2))
    careful = answer_all(batch, "careful", _missing_every(20))  # 1 in 20
    answer_all(batch, "another-careful", _missing_every(1000))
    assert len(lookup) == 20
    missed = Review.objects.filter(assignment_id__in=lookup).count()
    assert 0 < missed < 20  # the gold misses alone hold some of its HITs, not all

    reviews_hold_by_policy(batch=batch)

    # Every HIT is held now: those with a miss already were, the rule holds the others.
    reviews = Review.objects.filter(assignment_id__in=lookup)
    assert reviews.count() == 20
    by_rule = [r for r in reviews if any(x.get("policy") == POLICY for x in r.reasons)]
    assert len(by_rule) == 20 - missed
    reason = next(x for x in by_rule[0].reasons if x.get("policy") == POLICY)
    assert reason["gold_seen"] == 20 and reason["gold_right"] == 10
    counted = Answer.objects.filter(counted_reviewed(), assignment_id__in=lookup)
    assert not counted.exists()
    # A careful worker's one miss holds that HIT only.
    assert Review.objects.filter(assignment_id__in=careful).count() == 1
    assert not any(
        x.get("policy") == POLICY
        for r in Review.objects.filter(assignment_id__in=careful)
        for x in r.reasons
    )


def test_too_few_gold_answers_hold_nobody(tmp_path):
    batch = _second_batch(tmp_path, hits=MIN_GOLD - 1)
    taken = answer_all(batch, "misses-all", _missing_every(1))
    gold = Answer.objects.filter(assignment_id__in=taken, question__item__kind__in=GOLD_KINDS)
    assert gold.count() < MIN_GOLD
    reviews_hold_by_policy(batch=batch)
    assert not any(
        x.get("policy") == POLICY
        for r in Review.objects.filter(assignment__hit__batch=batch)
        for x in r.reasons
    )
