"""Reconciliation with Prolific (annotation/crowd/prolific/reconcile.py), against the stand-in of its API (tests/annotation/crowd/prolific/standin.py): every
submission and the money compared; a cost it cannot read is a difference."""

from decimal import Decimal

import pytest

from annotation.crowd.prolific import studies
from annotation.services.work.decisions import assignment_approve
from annotation.services.work.worker_actions import worker_bonus
from tests.annotation.crowd.prolific.test_provider import answers_for, draft

pytestmark = pytest.mark.django_db


def test_reconciliation_compares_every_submission_and_the_money(pro, paired_run, admin_client):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from annotation.crowd.prolific.reconcile import prolific_reconcile

    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "paid")
    pro.submit(a, answers_for(a))
    a.refresh_from_db()
    assignment_approve(assignment=a)
    worker_bonus(assignment=a, amount="0.40", reason="Careful work")
    report = prolific_reconcile(client=pro.client)
    [row] = report.rows
    assert row.matches, row
    assert row.rewards_there == row.rewards_here == batch.reward
    assert row.bonuses_there == row.bonuses_here == Decimal("0.40")
    call_command("prolific_reconcile")  # exits 0 when everything matches
    # Someone completes at Prolific with the code but no work here; a status changes there.
    intruder = pro.standin.start(batch.provider_hit_type_id, pro.standin.participant())
    pro.standin.complete(intruder, studies.completion_code(batch, studies.COMPLETED))
    pro.standin.submissions[pro.session("paid")]["status"] = "REJECTED"
    report = prolific_reconcile(client=pro.client)
    [row] = report.rows
    assert row.no_work_here == [intruder]
    assert row.disagree == [
        {"submission": pro.session("paid"), "here": "approved", "there": "REJECTED"}
    ]
    with pytest.raises(CommandError, match="differ"):
        call_command("prolific_reconcile")
    page = admin_client.post("/prolific/reconcile/").content.decode()
    assert intruder in page and "differs" in page


def test_an_unreadable_cost_is_a_difference_not_agreement(pro, paired_run, monkeypatch):
    from annotation.crowd.prolific.reconcile import prolific_reconcile

    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "paid")
    pro.submit(a, answers_for(a))
    a.refresh_from_db()
    assignment_approve(assignment=a)
    monkeypatch.setattr(
        pro.standin, "_study_cost", lambda params, body, sid: (200, {"rewards": {}}, {})
    )
    [row] = prolific_reconcile(client=pro.client).rows
    assert row.money_unread and not row.matches
