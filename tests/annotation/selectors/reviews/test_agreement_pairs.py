"""The run page and the workers page measure agreement the same way, over the same answers,
and both say how many held answers they leave out (`selectors/reviews/agreement_pairs.py`; issue 46:
they disagreed when work was held)."""

from annotation.flows.cxc.vocabulary import CxcStage
from annotation.models import Review, ReviewStatus
from annotation.selectors.reviews.agreement_pairs import held_answers
from annotation.selectors.runs.run_page import stage_agreement
from annotation.selectors.runs.run_workers import run_workers
from tests.annotation.held_reviews import cxc_held


def test_both_pages_pool_the_same_pairs_and_name_the_held_answers(dataset, client, admin_user):
    review = cxc_held(dataset, CxcStage.SIS)
    run = review.assignment.hit.batch.run
    held = held_answers(run)
    assert held == review.assignment.answers.count() > 0
    rows = [r for r in run_workers(run=run) if r.compared]
    ok = sum(round(r.agreement * r.compared) for r in rows)
    pairs = sum(r.compared for r in rows)
    (stage,) = [s for s in stage_agreement(run) if s["stage"] == CxcStage.SIS]
    assert stage["pairs"] == pairs // 2 and stage["agreement"] == round(ok / pairs, 4)
    held_worker = review.assignment.worker_id
    assert all(r.worker.pk != held_worker for r in rows)  # held work is in neither
    client.force_login(admin_user)
    words = f"{held} answers held for review are left out"
    assert words in client.get(f"/runs/{run.pk}/").content.decode()
    assert words in client.get(f"/runs/{run.pk}/workers/").content.decode()
    # Approved, it counts on both pages alike.
    Review.objects.filter(pk=review.pk).update(status=ReviewStatus.APPROVED)
    assert held_answers(run) == 0
    rows = [r for r in run_workers(run=run) if r.compared]
    (stage,) = [s for s in stage_agreement(run) if s["stage"] == CxcStage.SIS]
    assert stage["pairs"] == sum(r.compared for r in rows) // 2
