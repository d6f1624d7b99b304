"""The review queue's sorting and bulk decisions: each ticked review decided on its own, a
rejection without feedback refused for every review, nothing half-decided."""

import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import AssignmentState, Review, ReviewStatus
from annotation.selectors.reviews.reviews import review_queue_view
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import review_decide
from pipeline.simulate import WorkerProfile

pytestmark = pytest.mark.django_db


@pytest.fixture
def held(proposed):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(
        batch=batch, workers=3, profile=WorkerProfile(accuracy=1.0, gold_accuracy=0.0), seed=3
    )
    reviews = list(Review.objects.filter(status=ReviewStatus.OPEN).order_by("pk"))
    assert len(reviews) >= 3, "gold accuracy 0 must hold several HITs"
    return reviews


def test_bulk_approve_and_reject(held, admin_client, client):
    first, second, *rest = held
    assert client.post("/review/", {"review": [first.pk], "decision": "approve"}).status_code == 302
    assert Review.objects.get(pk=first.pk).status == ReviewStatus.OPEN  # not staff: login page
    # Rejecting needs feedback: every ticked review stays open, each with the reason.
    page = admin_client.post(
        "/review/", {"review": [first.pk, second.pk], "decision": "reject"}, follow=True
    ).content.decode()
    assert page.count("feedback") >= 2
    assert (
        Review.objects.filter(pk__in=[first.pk, second.pk], status=ReviewStatus.OPEN).count() == 2
    )
    admin_client.post(
        "/review/",
        {"review": [first.pk, second.pk], "decision": "reject", "feedback": "Gold items wrong."},
    )
    for review in Review.objects.filter(pk__in=[first.pk, second.pk]):
        assert review.status == ReviewStatus.REJECTED
        assert review.assignment.state == AssignmentState.REJECTED
    # An already decided review in the set is reported, the others are decided.
    page = admin_client.post(
        "/review/", {"review": [first.pk, rest[0].pk], "decision": "approve"}, follow=True
    ).content.decode()
    assert f"Review {first.pk}" in page and "already decided" in page
    assert Review.objects.get(pk=rest[0].pk).status == ReviewStatus.APPROVED
    assert Review.objects.get(pk=first.pk).status == ReviewStatus.REJECTED


def test_sorting_by_deadline_held_time_and_batch(held):
    review_decide(review=held[0], approve=True)
    for sort in ("deadline", "held", "batch", "nonsense"):
        view = review_queue_view(sort=sort)
        ids = [row["review"].pk for row in view["rows"]]
        assert sorted(ids) == sorted(r.pk for r in held[1:])
        assert view["sort"] == (sort if sort != "nonsense" else "deadline")
    held_order = [row["review"].created_at for row in review_queue_view(sort="held")["rows"]]
    assert held_order == sorted(held_order)


def test_the_queue_links_each_review_to_its_run_and_batch_and_names_no_platform(held, admin_client):
    """Issue 46: no link to the runs, and an "MTurk pays on its own at" column on every
    installation."""
    page = admin_client.get("/review/").content.decode()
    batch = held[0].assignment.hit.batch
    assert f'href="/runs/{batch.run_id}/"' in page and f'href="/batches/{batch.pk}/"' in page
    assert "MTurk" not in page and "The provider pays on its own at" in page
