"""Two decisions of one review at once (a double-click, two reviewers): one wins, the other
is refused; the review is decided once, with one event (row lock on the review)."""

import threading

import pytest
from django.db import connection

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Event, Review, ReviewStatus
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import reviews_decide
from pipeline.simulate import WorkerProfile

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("decisions", [(True, True), (True, False)], ids=["twice", "opposite"])
def test_concurrent_decisions_of_one_review(proposed, decisions):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(
        batch=batch, workers=3, profile=WorkerProfile(accuracy=1.0, gold_accuracy=0.0), seed=3
    )
    review = Review.objects.filter(status=ReviewStatus.OPEN).order_by("pk").first()
    assert review is not None
    barrier = threading.Barrier(len(decisions))
    results = []

    def decide(approve):
        try:
            barrier.wait()
            results.append(
                reviews_decide(review_ids=[review.pk], approve=approve, feedback="gold missed")
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(a,)) for a in decisions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    decided = [r for r in results if r["decided"] == [review.pk]]
    refused = [r for r in results if review.pk in r["failed"]]
    assert len(decided) == 1 and len(refused) == 1, results
    assert "already decided" in refused[0]["failed"][review.pk]
    events = Event.objects.filter(action="review.decided", assignment=review.assignment_id)
    assert events.count() == 1
    review.refresh_from_db()
    assert review.status == events.get().data["status"]
