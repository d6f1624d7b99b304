"""Implausibly fast work held for review when the run's setting says so (issue 27): the
approval policy (`reviews_hold_by_policy`, before our auto-approval and periodically before a
platform's own) opens a review for work faster than `hold_fast_seconds_per_item`; the rule is
shown on the review page, the batch page and the run page. Every flow has the setting."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, AssignmentState, Review, Run
from annotation.services.runs.batches import batch_create, batch_publish, batch_warnings
from annotation.services.runs.runs import run_check_config
from annotation.services.work.reviews import assignments_auto_approve
from pipeline.errors import InputError
from pipeline.simulate import WorkerProfile

pytestmark = pytest.mark.django_db

LATER = timedelta(days=30)  # past every batch's approval delay


def _answered(run: Run, limit: float):  # type: ignore[no-untyped-def]
    """Stage 2 answered by two workers; one took 2 s per item, the other 30 s."""
    Run.objects.filter(pk=run.pk).update(config={**run.config, "hold_fast_seconds_per_item": limit})
    run.refresh_from_db()
    batch = batch_publish(
        batch=batch_create(
            run=run, stage=BisonStage.SELECTION, provider="simulated", assignments_per_hit=2
        )
    )
    simulate_crowd(batch=batch, workers=2, profile=WorkerProfile(accuracy=1.0))
    fast, slow = Assignment.objects.filter(hit__batch=batch).order_by("pk")
    for assignment, per_item in ((fast, 2), (slow, 30)):
        n = assignment.hit.questions.count()
        Assignment.objects.filter(pk=assignment.pk).update(
            started_at=None, submitted_at=assignment.accepted_at + timedelta(seconds=per_item * n)
        )
    return batch, fast, slow


def test_fast_work_is_held_before_it_is_approved_when_the_run_says_so(paired_run, admin_client):
    batch, fast, slow = _answered(paired_run, limit=5)
    approved = assignments_auto_approve(batch=batch, now=timezone.now() + LATER)
    assert approved == 1
    fast.refresh_from_db(), slow.refresh_from_db()
    assert fast.state == AssignmentState.SUBMITTED and slow.state == AssignmentState.APPROVED
    review = Review.objects.get()
    n = fast.hit.questions.count()
    assert review.assignment_id == fast.pk and review.reasons == [
        {
            "policy": "fast_work",
            "seconds": 2.0 * n,
            "items": n,
            "seconds_per_item": 2.0,
            "limit": 5.0,
        }
    ]
    # Where the held work is reviewed: why, and the rule.
    page = admin_client.get(f"/review/{review.pk}/").content.decode()
    assert 'id="held-because"' in page
    assert f"2 s per item ({n} items in {2 * n} s), faster than the run&#x27;s rule" in page
    assert "Work faster than 5 s per item" in page
    # The batch and run pages show the rule and what it held.
    for url in (f"/batches/{batch.pk}/", f"/runs/{paired_run.pk}/"):
        page = admin_client.get(url).content.decode()
        assert "Work faster than 5 s per item" in page and "hold_fast_seconds_per_item" in page
        assert "Held" in page and ": 1" in page, url


def test_without_the_setting_fast_work_is_only_flagged(paired_run, admin_client):
    batch, fast, _ = _answered(paired_run, limit=0)
    assert assignments_auto_approve(batch=batch, now=timezone.now() + LATER) == 2
    assert not Review.objects.exists()
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    assert "Fast work is flagged, not held" in page


def test_a_platform_paying_sooner_than_the_policy_runs_is_warned_about(paired_run, settings):
    config = {**paired_run.config, "hold_fast_seconds_per_item": 3}
    Run.objects.filter(pk=paired_run.pk).update(config=config)
    paired_run.refresh_from_db()
    batch = batch_create(
        run=paired_run,
        stage=BisonStage.SELECTION,
        provider="mturk",  # approves on its own at the batch's delay
        auto_approval_delay_seconds=600,
    )
    assert any("fast work may be paid before it is held" in w for w in batch_warnings(batch=batch))
    settings.CELERY_BEAT_SCHEDULE = {"auto-approve": {"schedule": 60.0}}
    assert not any("fast work" in w for w in batch_warnings(batch=batch))


@pytest.mark.parametrize("kind", ["bison", "eccv", "cxc", "caption_quality"])
def test_every_flow_has_the_setting_checked(kind):
    assert run_check_config(kind=kind, config={})["hold_fast_seconds_per_item"] == 0.0
    assert run_check_config(kind=kind, config={"hold_fast_seconds_per_item": 2.5})[
        "hold_fast_seconds_per_item"
    ] == pytest.approx(2.5)
    with pytest.raises(InputError) as caught:
        run_check_config(kind=kind, config={"hold_fast_seconds_per_item": -1})
    assert caught.value.field == "hold_fast_seconds_per_item"
