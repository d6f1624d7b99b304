"""Pay of many batches at once (issue 32's dashboard): the same figures as pay_estimate and
effective_pay read batch by batch, in a number of statements that does not grow with the
batches."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, AssignmentState, Batch, Bonus, Hit, Item, Question
from annotation.selectors.money.pay import effective_pay, pay_estimate
from annotation.selectors.money.pay_many import effective_pays, pay_estimates
from annotation.selectors.runs.dashboard import pay_summaries, pay_summary
from annotation.services.money.pay import batch_pay_top_up
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.worker_identity import worker_get_or_create

pytestmark = pytest.mark.django_db


def _copy(template: Batch, *, hits: int, per_hit: int, reward: str, status: str) -> Batch:
    """A batch like `template` with `hits` HITs of `per_hit` questions on the run's items (the
    small run has too few items for five real batches)."""
    copy = Batch.objects.get(pk=template.pk)
    copy.pk, copy.reward, copy.status, copy.items_per_hit = None, Decimal(reward), status, per_hit
    copy.save()
    items = list(Item.objects.filter(run=template.run_id).order_by("pk"))
    for position in range(hits):
        hit = Hit.objects.create(batch=copy, position=position)
        for n in range(per_hit):
            Question.objects.create(hit=hit, item=items[(position + n) % len(items)], position=n)
    return copy


def _work(batch: Batch, name: str, seconds: float, *, started: float | None = None) -> None:
    """`name` submits the batch's next HIT `seconds` after accepting it (its first answer
    `started` seconds after, if given)."""
    hit = batch.hits.filter(assignments__isnull=True).order_by("position").first()
    submitted = timezone.now()
    accepted = submitted - timedelta(seconds=seconds)
    Assignment.objects.create(
        hit=hit,
        worker=worker_get_or_create(provider="local", external_id=name),
        state=AssignmentState.APPROVED,
        accepted_at=accepted,
        started_at=accepted + timedelta(seconds=started) if started is not None else None,
        submitted_at=submitted,
    )


@pytest.fixture
def batches(paired_run, monkeypatch):
    """A pilot whose rows pass the (lowered) cap, a second pilot-measured batch, a batch paid
    below the minimum and topped up, one with no work, a draft."""
    monkeypatch.setattr("annotation.selectors.money.pay.PILOT_ROWS", 7)
    monkeypatch.setattr("annotation.selectors.money.pay_many.PILOT_ROWS", 7)
    pilot = batch_publish(
        batch=batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="local",
            items_per_hit=1,
            reward="0.10",
        )
    )
    for n in range(6):
        _work(pilot, f"p{n}", 40 + 10 * n)
    second = _copy(pilot, hits=3, per_hit=1, reward="0.20", status="published")
    for n in range(3):
        _work(second, f"s{n}", 600)  # beyond the cap for the batch after: only one counts
    paid = _copy(pilot, hits=3, per_hit=2, reward="0.05", status="completed")
    _work(paid, "quick", 15)
    _work(paid, "slow", 1800, started=1700)  # 100 s active, from the first answer
    _work(paid, "quick", 500)  # a second HIT, capped at the expected 140 s
    batch_pay_top_up(batch=paid)
    idle = _copy(pilot, hits=2, per_hit=4, reward="0.90", status="published")
    draft = _copy(pilot, hits=0, per_hit=3, reward="0.30", status="draft")
    return [pilot, second, paid, idle, draft]


def test_many_batches_pay_the_same_as_each_read_alone(batches):
    pilot, second, paid, idle, draft = batches
    alone = {b.pk: pay_estimate(batch=b) for b in batches}
    together = pay_estimates(batches=batches)
    assert together == alone
    # The batches differ where the figures come from: the test compares unlike cases.
    assert alone[pilot.pk].source != alone[second.pk].source == "measured in a pilot"
    assert len({e.hourly for e in alone.values()}) == len(batches)
    # The pilot cap (7 here) reads the 6 pilot rows and the first of the second batch's.
    assert alone[paid.pk].seconds_per_item == pytest.approx(70, abs=3)
    shown = [pilot, second, paid, idle]
    effective = effective_pays(batches=shown, estimates=together)
    assert effective == {b.pk: effective_pay(batch=b, estimate=alone[b.pk]) for b in shown}
    assert effective[paid.pk]["below_minimum"] == 0 and effective[paid.pk]["workers"] == 2
    assert effective[paid.pk]["per_worker"] and Bonus.objects.count() == 2
    assert effective[idle.pk]["hourly"] is None
    assert pay_summaries(batches=batches) == {b.pk: pay_summary(b) for b in batches}


def test_many_batches_cost_no_more_statements_than_one(batches):
    counts = []
    for shown in (batches[2:3], batches):  # one with a pilot, then all
        with CaptureQueriesContext(connection) as queries:
            pay_summaries(batches=shown)
        counts.append(len(queries))
    assert counts[0] == counts[1] <= 8, counts
