"""The run's workers page: per-worker numbers measured against workers built to be right or
wrong on gold, the accuracy histogram, and block / unblock / bonus / notify acting on the
run's own workers only."""

import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.eccv.selectors import GOLD_EXPECTED
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Answer, Assignment, Bonus, Event, Review, Worker
from annotation.selectors.runs.run_workers import accuracy_histogram, run_workers
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import review_decide
from pipeline.simulate import Population, WorkerProfile

pytestmark = pytest.mark.django_db

RIGHT = WorkerProfile(accuracy=1.0, gold_accuracy=1.0, seconds_per_answer=10.0)
WRONG = WorkerProfile(accuracy=1.0, gold_accuracy=0.0, seconds_per_answer=10.0)


@pytest.fixture
def worked(proposed):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    report = simulate_crowd(
        batch=batch,
        workers=4,
        profile=RIGHT,
        population=Population("half wrong on gold", ((0.5, RIGHT), (0.5, WRONG))),
    )
    for review in Review.objects.filter(status="open"):
        review_decide(review=review, approve=True)
    return proposed, report


def test_rows_measure_gold_agreement_speed_and_pay(worked):
    run, report = worked
    rows = {r.worker.external_id: r for r in run_workers(run=run)}
    assert set(rows) == set(report.worker_ids)
    right = [w for w, p in report.team.items() if p.gold_accuracy == 1.0]
    wrong = [w for w, p in report.team.items() if p.gold_accuracy == 0.0]
    assert right and wrong
    for w in right:
        assert rows[w].gold_total > 0 and rows[w].gold_accuracy == 1.0
    for w in wrong:  # a wrong 4-level answer can still fall on the right side of the scale
        gold = Answer.objects.filter(
            assignment__worker__external_id=w, question__item__kind__in=list(GOLD_EXPECTED)
        ).values_list("question__item__kind", "label")
        assert rows[w].gold_total == len(gold) > 0
        assert rows[w].gold_right == sum(label in GOLD_EXPECTED[kind] for kind, label in gold)
    assert sum(rows[w].gold_right for w in wrong) < sum(rows[w].gold_total for w in wrong)
    for row in rows.values():
        expected = Assignment.objects.filter(worker=row.worker, hit__batch__run=run).count()
        assert row.assignments == expected > 0
        assert row.pool == EccvStage.JUDGMENT
        assert row.seconds_per_item is not None and 0 < row.seconds_per_item <= 60
        assert row.agreement is None  # one judgment per pair here: nobody to agree with
        assert row.hourly is not None and row.hours > 0
    histogram = accuracy_histogram(list(rows.values()))
    assert histogram["measure"] == "gold accuracy"
    assert histogram["counts"][-1] >= len(right) and sum(histogram["counts"]) == len(rows)


def test_agreement_is_the_share_of_other_workers_labels_matched(proposed):
    """ECCV judgments with three workers per HIT: two always right, one always picking the first
    option. The constant worker's agreement is the share of items where its pick was right
    (it matches both or neither); each right worker's is half from the other right worker
    plus half the constant worker's hits."""
    batch = batch_publish(
        batch=batch_create(
            run=proposed,
            stage=EccvStage.JUDGMENT,
            provider="simulated",
            items_per_hit=6,
            assignments_per_hit=3,
        )
    )
    right = WorkerProfile(accuracy=1.0)
    simulate_crowd(batch=batch, workers=2, profile=right, id_prefix="right")
    simulate_crowd(
        batch=batch, workers=1, profile=WorkerProfile(behaviour="constant"), id_prefix="const"
    )
    for review in Review.objects.filter(status="open"):
        review_decide(review=review, approve=True)
    rows = {r.worker.external_id: r for r in run_workers(run=proposed)}
    hits = rows["const-000"].agreement
    assert hits is not None
    for name in ("right-000", "right-001"):
        assert rows[name].agreement == pytest.approx(0.5 + 0.5 * hits)
        assert rows[name].compared == rows["const-000"].compared > 0
    assert 0.0 < hits < 1.0


def test_page_lists_workers_and_is_staff_only(worked, admin_client, client):
    run, report = worked
    assert client.get(f"/runs/{run.pk}/workers/").status_code == 302
    page = admin_client.get(f"/runs/{run.pk}/workers/").content.decode()
    for external_id in report.worker_ids:
        assert external_id in page
    assert 'id="accuracy-histogram"' in page and "gold accuracy" in page


def test_actions_reach_only_the_runs_workers(worked, admin_client):
    run, report = worked
    worker = Worker.objects.get(external_id=report.worker_ids[0])
    base = f"/runs/{run.pk}/workers/{worker.pk}"
    admin_client.post(f"{base}/block/", {"scope": "project", "reason": "gold failures"})
    assert Worker.objects.get(pk=worker.pk).blocked
    admin_client.post(f"{base}/unblock/", {"reason": "appeal"})
    assert not Worker.objects.get(pk=worker.pk).blocked
    response = admin_client.post(f"{base}/bonus/", {"amount": "0.50", "reason": "careful work"})
    assert response.status_code == 302
    bonus = Bonus.objects.get(assignment__worker=worker)
    assert str(bonus.amount) == "0.50" and bonus.assignment.hit.batch.run_id == run.pk
    # A bonus without a reason is refused with the service's message; nothing is paid.
    page = admin_client.post(f"{base}/bonus/", {"amount": "1.00", "reason": ""}, follow=True)
    assert "reason" in page.content.decode() and Bonus.objects.count() == 1
    stranger = Worker.objects.create(provider="simulated", external_id="not-in-this-run")
    assert (
        admin_client.post(
            f"/runs/{run.pk}/workers/{stranger.pk}/block/", {"reason": "x"}
        ).status_code
        == 404
    )
    assert admin_client.post(f"{base}/delete/", {}).status_code == 404
    ids = [Worker.objects.get(external_id=w).pk for w in report.worker_ids[:2]] + [stranger.pk]
    admin_client.post(
        f"/runs/{run.pk}/workers/notify/",
        {"worker": ids, "subject": "Thanks", "message": "More HITs tomorrow."},
    )
    notified = set(
        Event.objects.filter(action="worker.notified").values_list("worker_id", flat=True)
    )
    assert notified == set(ids[:2])


def test_quality_estimates_carry_95_percent_intervals(worked, admin_client):
    """Gold accuracy and agreement come with Wilson intervals, on the page and in the API."""
    from pipeline.expectation import wilson

    run, _ = worked
    rows = run_workers(run=run)
    with_gold = [r for r in rows if r.gold_total]
    assert with_gold
    for row in with_gold:
        low, high = row.gold_interval
        assert (low, high) == wilson(row.gold_right, row.gold_total)
        assert low <= row.gold_accuracy <= high and high - low > 0
        if row.gold_total < 20:  # a handful of gold questions says little: a wide interval
            assert high - low > 0.15
    assert all(r.agreement_interval is None for r in rows)  # nobody to agree with here
    page = admin_client.get(f"/runs/{run.pk}/workers/").content.decode()
    row = with_gold[0]
    low, high = row.gold_interval
    assert f"95 % {round(100 * low)}–{round(100 * high)} %" in page
    body = admin_client.get(f"/api/runs/{run.pk}/workers/").json()
    by_id = {r["id"]: r for r in body["results"]}
    assert by_id[row.worker.pk]["gold_interval"] == [pytest.approx(low), pytest.approx(high)]
    assert by_id[row.worker.pk]["agreement_interval"] is None
