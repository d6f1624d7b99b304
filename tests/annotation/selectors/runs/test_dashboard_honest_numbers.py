"""Numbers that do not mislead (issue 27): money owed for submitted work is not "paid", a stage
with no batch is "not started" rather than 0, triples are counted from stage 2's answers before
stage 3 makes them, and implausibly fast work is flagged on the dashboard."""

from decimal import Decimal

import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.selectors import bison_funnel
from annotation.flows.bison.vocabulary import BisonItemKind, BisonStage
from annotation.models import Assignment, AssignmentState, Item, Run
from annotation.selectors.runs.dashboard import pay_summary
from annotation.selectors.runs.run_page import run_spend
from annotation.selectors.runs.run_workers import run_workers
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.simulate import WorkerProfile

pytestmark = pytest.mark.django_db


def _selection(run: Run, seconds: float = 20.0, limit: int | None = None):
    batch = batch_publish(
        batch=batch_create(
            run=run,
            stage=BisonStage.SELECTION,
            provider="simulated",
            assignments_per_hit=2,
            limit=limit,
        )
    )
    profile = WorkerProfile(accuracy=0.9, seconds_per_answer=seconds)
    simulate_crowd(batch=batch, workers=3, profile=profile)
    return batch


def test_submitted_work_is_owed_not_paid_until_approved(paired_run):
    batch = _selection(paired_run)
    done = Assignment.objects.filter(hit__batch=batch, state=AssignmentState.SUBMITTED)
    n = done.count()
    assert n > 0
    spend = run_spend(paired_run)
    assert Decimal(spend["owed"]) == batch.reward * n and Decimal(spend["paid"]) == 0
    done.update(state=AssignmentState.APPROVED)
    spend = run_spend(paired_run)
    assert Decimal(spend["owed"]) == 0 and Decimal(spend["paid"]) == batch.reward * n


def test_the_funnel_says_not_started_and_counts_triples_from_stage_2(paired_run, admin_client):
    fresh = Run.objects.create(dataset=paired_run.dataset, kind="bison", project=paired_run.project)
    assert [n for _, n in bison_funnel(fresh)] == [None, None, None]
    assert b"not started" in admin_client.get(f"/runs/{fresh.pk}/").content
    pairs = Item.objects.filter(run=paired_run, kind=BisonItemKind.IMAGE_PAIR).count()
    assert bison_funnel(paired_run) == [
        ("image pairs", pairs),
        ("triples", None),
        ("verified", None),
    ]
    _selection(paired_run)
    assert not Item.objects.filter(run=paired_run, kind=BisonItemKind.TRIPLE).exists()
    (_, _), (_, triples), (_, verified) = bison_funnel(paired_run)
    assert triples > 0 and verified is None
    # Stage 3's batch makes exactly the triples the funnel counted.
    batch_create(run=paired_run, stage=BisonStage.VERIFICATION, provider="simulated")
    assert Item.objects.filter(run=paired_run, kind=BisonItemKind.TRIPLE).count() == triples


def test_implausibly_fast_work_is_flagged_and_plausible_work_is_not(paired_run, admin_client):
    fast = _selection(paired_run, seconds=0.5, limit=4)  # half a second per caption choice
    summary = pay_summary(fast)
    assert summary["speedup"] is not None and summary["speedup"] >= 4
    assert b"implausible:" in admin_client.get("/").content
    paced = _selection(paired_run, limit=4)  # 20 s per answer, near the expected 25.9 s
    assert pay_summary(paced)["effective"] is not None and pay_summary(paced)["speedup"] is None


def test_an_implausibly_fast_worker_is_flagged_on_the_workers_page(paired_run, admin_client):
    """A worker's median time per item ("0.0 s per item" was shown as any other number)."""
    fast = _selection(paired_run, seconds=0.5, limit=4)
    fast_ids = set(Assignment.objects.filter(hit__batch=fast).values_list("worker", flat=True))
    rows = {r.worker.pk: r for r in run_workers(run=paired_run)}
    assert all(rows[w].implausible and rows[w].speedup >= 4 for w in fast_ids)
    page = admin_client.get(f"/runs/{paired_run.pk}/workers/").content.decode()
    assert page.count("implausible:") == len(fast_ids)
    paced = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="simulated")
    )
    profile = WorkerProfile(accuracy=0.9, seconds_per_answer=20.0)  # near the expected 25.9 s
    simulate_crowd(batch=paced, workers=2, profile=profile, id_prefix="paced")
    paced_ids = set(Assignment.objects.filter(hit__batch=paced).values_list("worker", flat=True))
    rows = {r.worker.pk: r for r in run_workers(run=paired_run)}
    assert paced_ids and not paced_ids & fast_ids
    assert not any(rows[w].implausible for w in paced_ids)
