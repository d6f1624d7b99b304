"""BISON: "Bad caption selections will not be rewarded" -- stage 3 judges stage 2's selections,
each selector's rejected share is computed, and the approval policy holds bad selectors."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.flows.bison.selectors import (
    bison_selection_outcomes,
    bison_selector_report,
    bison_stage_counts,
)
from annotation.flows.bison.vocabulary import BisonItemKind, BisonStage
from annotation.models import Answer, Assignment, AssignmentState, Batch, Hit, Item, Review
from annotation.services.runs.batches import batch_create, batch_publish, batch_warnings
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.reviews import assignments_auto_approve
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from pipeline.errors import InputError
from tests.factories import verify_every_hit

pytestmark = pytest.mark.django_db
DAY = 24 * 3600


def worker(name):
    return worker_get_or_create(provider="local", external_id=name)


def first_captions(assignment):
    return {
        f"q{q.position}": "c0" for q in assignment.hit.questions.select_related("item__positive")
    }


def run_stage2(run, options=None):
    """GOOD takes the first HIT, BAD the rest; both pick a caption for every pair."""
    batch = batch_publish(
        batch=batch_create(
            run=run,
            stage=BisonStage.SELECTION,
            provider="local",
            items_per_hit=2,
            options=options or {},
        )
    )
    names = ["good-selector"] + ["bad-selector"] * (batch.hits.count() - 1)
    for name in names:
        w = worker(name)
        a = assignment_claim_next(batch=batch, worker=w)
        assignment_submit(assignment_id=a.pk, worker=w, answers=first_captions(a))
    return batch


def run_stage3(run):
    """Two verifiers match GOOD's captions to the positive and BAD's to the negative."""
    batch = batch_publish(
        batch=batch_create(
            run=run, stage=BisonStage.VERIFICATION, provider="local", items_per_hit=1000
        )
    )
    selector = {
        (a.question.item_id, a.caption_id): a.assignment.worker.external_id
        for a in Answer.objects.filter(question__hit__batch__stage=BisonStage.SELECTION)
        .exclude(caption=None)
        .select_related("assignment__worker", "question")
    }

    def pick(q):
        positive, negative = ("right", "left") if q.swapped else ("left", "right")
        good = selector[(q.item.source_id, q.item.caption_id)] == "good-selector"
        return positive if good else negative

    verify_every_hit(batch, {"V1": pick, "V2": pick})
    return batch


def test_selections_no_verifier_matched_are_rejected_per_worker(paired_run):
    run_stage2(paired_run)
    run_stage3(paired_run)
    triples = Item.objects.filter(run=paired_run, kind=BisonItemKind.TRIPLE).count()
    outcomes = {
        Assignment.objects.filter(worker_id=pk).first().worker.external_id: o
        for pk, o in bison_selection_outcomes(run=paired_run).items()
    }
    assert outcomes["good-selector"]["judged"] == 2 and outcomes["good-selector"]["rejected"] == 0
    assert outcomes["bad-selector"]["judged"] == triples - 2
    assert outcomes["bad-selector"]["rejected"] == outcomes["bad-selector"]["judged"]
    assert outcomes["bad-selector"]["rejected_share"] == 1.0
    counts = bison_stage_counts(run=paired_run)["stage2"]
    assert counts["selections_judged"] == triples
    assert counts["selections_rejected"] == triples - 2
    report = bison_selector_report(run=paired_run)
    assert report[0]["rejected_share"] == 1.0 and report[0]["worker"].startswith("w-")
    assert "bad-selector" not in str(report)  # pseudonymised


def test_the_approval_policy_holds_a_worker_whose_selections_were_rejected(
    paired_run, admin_client
):
    stage2 = run_stage2(paired_run, options={"hold_min_judged": 2, "hold_rejected_share": 0.3})
    run_stage3(paired_run)
    approved = assignments_auto_approve(now=timezone.now() + timedelta(days=60))
    bad = Assignment.objects.filter(hit__batch=stage2, worker__external_id="bad-selector")
    good = Assignment.objects.get(hit__batch=stage2, worker__external_id="good-selector")
    assert good.state == AssignmentState.APPROVED
    assert all(a.state == AssignmentState.SUBMITTED for a in bad)
    reviews = Review.objects.filter(assignment__in=bad)
    assert reviews.count() == bad.count()
    reason = reviews.first().reasons[0]
    assert reason["policy"] == "rejected_selections" and reason["rejected_share"] == 1.0
    # Stage 3's verifiers are paid: their stage has no such policy (two per HIT).
    assert approved == 1 + 2 * Hit.objects.filter(batch__stage=BisonStage.VERIFICATION).count()
    # The review page says why, with the limit (it failed on a hold naming no question).
    page = admin_client.get(f"/review/{reviews.first().pk}/").content.decode()
    assert "Stage 3 rejected" in page and "over the batch&#x27;s limit of 30%" in page


def test_below_the_minimum_of_judged_selections_nobody_is_held(paired_run):
    stage2 = run_stage2(paired_run)  # default: hold only with >= 10 judged selections
    run_stage3(paired_run)
    assignments_auto_approve(now=timezone.now() + timedelta(days=60))
    assert not Review.objects.exists()
    assert not stage2.hits.filter(assignments__state=AssignmentState.SUBMITTED).exists()


def test_stage2_approval_delay_covers_stage3_and_publishing_warns_when_not(paired_run):
    batch = batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    assert batch.auto_approval_delay_seconds == 14 * DAY  # lifetime 7 d + planned stage 3 7 d
    assert batch_warnings(batch=batch) == []
    Batch.objects.filter(pk=batch.pk).update(lifetime_seconds=10 * DAY)
    batch.refresh_from_db()
    (warning,) = batch_warnings(batch=batch)
    assert "shorter than its lifetime plus the planned stage-3 time" in warning
    published = batch_publish(batch=batch)
    event = published.events.get(action="batch.published")
    assert event.data["warnings"] == [warning]


def test_a_bad_policy_option_is_refused_before_anything_is_written(paired_run):
    with pytest.raises(InputError, match="hold_rejected_share"):
        batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="local",
            options={"hold_rejected_share": 2},
        )
    assert not Batch.objects.exists()
