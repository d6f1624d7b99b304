"""Bonuses at Prolific (annotation/crowd/prolific/bonuses.py), against the stand-in of its API (tests/annotation/crowd/prolific/standin.py): never paid twice,
whatever step crashes."""

import pytest

from annotation.errors import ServiceError
from annotation.models import Bonus
from annotation.services.work.worker_actions import worker_bonus
from tests.annotation.crowd.prolific.test_provider import answers_for, draft

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "crash", ["create_lost", "create_refused", "after_setup", "pay_lost", "pay_502", "before_pay"]
)
def test_a_bonus_is_never_paid_twice_whatever_step_crashes(pro, paired_run, crash, monkeypatch):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "bonused")
    pro.submit(a, answers_for(a))
    a.refresh_from_db()
    from annotation.crowd.prolific import bonuses
    from annotation.services.jobs import remote_calls

    if crash == "create_lost":  # the set-up is made at Prolific, its answer lost
        pro.standin.lose("POST", "submissions/bonus-payments/")
    if crash == "create_refused":
        pro.standin.fail("POST", "submissions/bonus-payments/", status=400, why="bad csv")
    if crash == "pay_lost":  # Prolific pays; the connection drops before the answer
        pro.standin.lose("POST", r"bulk-bonus-payments/[0-9a-f]{24}/pay/")
    if crash == "pay_502":  # Prolific pays; a gateway error comes back instead
        pro.standin.lose("POST", r"bulk-bonus-payments/[0-9a-f]{24}/pay/", status=502)
    real_row = remote_calls.remote_call_row

    def dying_row(**kwargs):
        if crash == "after_setup" and kwargs["operation"] == "bonus.pay":
            raise RuntimeError("the worker died after the set-up")
        return real_row(**kwargs)

    def dying_record(**kwargs):
        if kwargs["action"] == "prolific.bonus_pay_requested":
            raise RuntimeError("the worker died before the call left")
        return None

    monkeypatch.setattr(remote_calls, "remote_call_row", dying_row)
    if crash == "before_pay":
        monkeypatch.setattr(bonuses, "event_record", dying_record)
    if crash in ("pay_lost", "pay_502"):
        # The payment is looked up at once and found: done, without a second payment.
        worker_bonus(assignment=a, amount="0.50", reason="Careful work")
    else:
        with pytest.raises((ServiceError, RuntimeError)):
            worker_bonus(assignment=a, amount="0.50", reason="Careful work")
    monkeypatch.undo()
    calls = len(pro.standin.calls)
    if crash == "before_pay":
        # The pay request was recorded but never left: sending it again could pay twice, so
        # the next attempt refuses and says what to check; nothing was paid or sent.
        with pytest.raises(ServiceError, match="could do it twice"):
            worker_bonus(assignment=a, amount="0.50", reason="Careful work")
        assert pro.standin.payments == []
        assert not [c for c in pro.standin.calls[calls:] if c[0] == "POST"]
        return
    if crash not in ("pay_lost", "pay_502"):
        bonus = worker_bonus(assignment=a, amount="0.50", reason="Careful work")
        assert bonus.sent_at is not None
    assert len(pro.standin.payments) == 1
    assert pro.standin.submissions[pro.session("bonused")]["bonus_payments"] == [50]
    assert Bonus.objects.filter(assignment=a).count() == 1
    assert Bonus.objects.get(assignment=a).sent_at is not None
    worker_bonus(assignment=a, amount="0.50", reason="Careful work")  # and again: nothing
    assert len(pro.standin.payments) == 1
    pays = [c for c in pro.standin.calls if c[1].endswith("/pay/")]
    assert len(pays) == 1  # never sent twice
