"""The pay Prolific computes (annotation/crowd/prolific/pay.py, spend.py, adjustments.py): the
declared whole minutes are what the rate is checked on, every refusal is shown at once, and an
underpayment at the median completion time is adjusted once, whatever answers are lost."""

from decimal import Decimal

import pytest

from annotation.crowd.prolific.adjustments import prolific_pay_adjust
from annotation.crowd.prolific.pay import declared_pay, median_pay
from annotation.crowd.prolific.publish import prolific_publish_start
from annotation.errors import Refused
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Bonus, BonusKind
from annotation.services.runs.batches import batch_create
from tests.annotation.api.test_schema import check, schema  # noqa: F401

pytestmark = pytest.mark.django_db


def draft(run, **options):
    return batch_create(
        run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=2, **options
    )


def answers_for(assignment):
    return {f"q{q.position}": "none" for q in assignment.hit.questions.all()}


def test_the_rate_is_checked_on_the_whole_minutes_prolific_is_told(pro, paired_run):
    """9 cents for about 20 seconds is USD 16.20/h unrounded, but the study declares 1 minute,
    so Prolific computes USD 5.40/h: refused, with the reward that would do."""
    cheap = draft(paired_run, reward=Decimal("0.09"), options={"allow_low_pay": True})
    declared = declared_pay(cheap)
    assert declared.expected_seconds < 60 and declared.minutes == 1
    assert declared.hourly == Decimal("5.40")
    with pytest.raises(Refused, match=r"USD 5\.40/h as Prolific computes it") as caught:
        prolific_publish_start(batch=cheap, provider=pro.provider)
    assert any("at least USD 0.14" in r for r in caught.value.reasons)
    assert not pro.standin.studies


def test_a_default_reward_meets_the_minimum_at_the_declared_minutes(pro, paired_run):
    batch = draft(paired_run)
    declared = declared_pay(batch)
    assert declared.hourly >= declared.minimum
    pro.publish(batch)
    study = pro.standin.studies[batch.provider_hit_type_id]
    assert study["estimated_completion_time"] == declared.minutes
    assert study["reward"] * 60 / study["estimated_completion_time"] >= 100 * declared.minimum


def test_prolifics_own_rates_and_every_refusal_are_shown_at_once(
    pro, paired_run, admin_client, settings
):
    pro.standin.reward_rates = {"min": 2400, "recommended": 3000}  # USD 24/h at this workspace
    batch = draft(paired_run)
    settings.CROWDVL_BUDGET = "0.10"
    pro.standin.balance = 1
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    refusal = page.split('id="refusal"')[1].split("</ul>")[0]
    assert refusal.count("<li>") == 3
    assert "enforced minimum of USD 24.00/h" in refusal
    assert "CROWDVL_BUDGET" in refusal and "available" in refusal
    assert "recommended 30.00/h (Prolific&#x27;s API)" in page
    response = admin_client.post(f"/api/batches/{batch.pk}/publish/")
    assert response.status_code == 409 and len(response.json()["reasons"]) == 3
    assert not pro.standin.studies


def test_an_underpayment_at_the_median_is_adjusted_once(pro, paired_run, admin_client, schema):  # noqa: F811
    batch = pro.publish(draft(paired_run))
    minimum = declared_pay(batch).minimum
    pro.seconds_taken = 10 * 60.0  # the task takes participants ten minutes, not one
    done = []
    for n in range(3):
        a = pro.take(batch, f"slow{n}")
        pro.submit(a, answers_for(a))
        done.append(a)
    review = median_pay(batch=batch, client=pro.client)
    assert review.submissions == 3 and review.median_seconds == 600
    assert review.underpaid and review.hourly == (batch.reward * 6).quantize(Decimal("0.01"))
    owed = (minimum / 6 - batch.reward).quantize(Decimal("0.01"))
    assert review.owed_each == owed and len(review.to_pay) == 3
    read = admin_client.get(f"/api/batches/{batch.pk}/prolific/pay/")
    check(schema, "/api/batches/{batch_id}/prolific/pay/", "get", read)
    assert read.json()["owed_participants"] == 3 and read.json()["median_seconds"] == 600
    page = admin_client.get(f"/prolific/batches/{batch.pk}/pay/").content.decode()
    assert 'id="adjust"' in page and f"{owed}" in page
    # The first payment's answer is lost (Prolific paid): looked up, never paid twice.
    pro.standin.lose("POST", r"bulk-bonus-payments/[0-9a-f]{24}/pay/")
    response = admin_client.post(f"/api/batches/{batch.pk}/prolific/pay/")
    assert response.status_code == 200, response.content
    check(schema, "/api/batches/{batch_id}/prolific/pay/", "post", response)
    assert response.json()["owed_participants"] == 0
    assert len(pro.standin.payments) == 3
    assert sorted(b["amount"] for b in pro.standin.payments) == [int(owed * 100)] * 3
    # Again, from the page and from the command: nothing more to pay.
    admin_client.post(f"/prolific/batches/{batch.pk}/pay/")
    prolific_pay_adjust(batch=batch, client=pro.client)
    assert len(pro.standin.payments) == 3
    assert Bonus.objects.filter(kind=BonusKind.PAY_ADJUSTMENT, sent_at__isnull=False).count() == 3


def test_a_quick_study_needs_no_adjustment(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    pro.seconds_taken = 20.0
    a = pro.take(batch, "quick")
    pro.submit(a, answers_for(a))
    review = prolific_pay_adjust(batch=batch, client=pro.client)
    assert not review.underpaid and review.to_pay == [] and pro.standin.payments == []


def test_no_token_and_a_missing_pilot_are_said_together(pro, paired_run, admin_client, settings):
    from annotation.crowd.prolific.client import client_default

    settings.CROWDVL_PROLIFIC_TOKEN = ""
    pro.provider.use_client(client_default)  # the installation's own client: no token
    batch = draft(paired_run)
    batch.hits.update(extra_assignments=10)  # more places than a pilot's, and no pilot
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    refusal = page.split('id="refusal"')[1].split("</ul>")[0]
    assert "CROWDVL_PROLIFIC_TOKEN is not set" in refusal and "before a pilot" in refusal
    assert refusal.count("<li>") == 2
