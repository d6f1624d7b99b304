"""A BISON run on Prolific from publishing to the export, against the stand-in of its API with
ids of Prolific's shape, where the answer of every call that creates or pays something is lost
once (the call took effect at Prolific; the connection dropped or a gateway error came back):
nothing is made or paid twice, and the local records agree with Prolific's at the end."""

from decimal import Decimal
from pathlib import Path

import pytest

from annotation.crowd.prolific.adjustments import prolific_pay_adjust
from annotation.crowd.prolific.reconcile import prolific_reconcile
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import AssignmentState, Bonus, Export, HitStatus, RemoteCall, Worker
from annotation.services.money.batch_extension import hit_add_assignments
from annotation.services.runs.batches import batch_create, batch_sync
from annotation.services.work.decisions import assignment_approve, assignment_reject
from annotation.services.work.worker_actions import worker_bonus, workers_notify
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db

HEX24 = r"[0-9a-f]{24}"
LONG = (
    "LOW_EFFORT: the same caption was chosen for every pair, including pairs where it plainly "
    "describes the other image; please read the instructions."
)


def answers_for(assignment):
    return {f"q{q.position}": "none" for q in assignment.hit.questions.all()}


def test_a_bison_run_on_prolific_with_every_money_answer_lost_once(pro, paired_run, run_on_commit):
    standin = pro.standin
    # Publishing stage 2: the study's, two groups' and the PUBLISH's answers are lost.
    standin.lose("POST", "studies/", status=502)
    standin.lose("POST", "participant-groups/")
    standin.lose("POST", "participant-groups/", status=504)
    standin.lose("POST", rf"studies/{HEX24}/transition/")
    selection = pro.publish(
        batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="prolific",
            items_per_hit=2,
            limit=4,
        )
    )
    study = standin.studies[selection.provider_hit_type_id]
    assert study["status"] == "ACTIVE" and len(study["id"]) == 24
    assert standin.calls.count(("POST", "studies/")) == 1
    assert len(standin.groups) == standin.calls.count(("POST", "participant-groups/"))
    spent_on_publishing = 1_000_000 - standin.balance

    # Participants: one returns, one times out, the others work (five minutes each).
    pro.seconds_taken = 300.0
    gone = pro.take(selection, "leaver")
    slow = pro.take(selection, "sleeper")
    standin.return_submission(pro.session("leaver"))
    standin.time_out(pro.session("sleeper"))
    batch_sync(batch=selection)
    for a in (gone, slow):
        a.refresh_from_db()
        assert a.state == AssignmentState.ABANDONED
    workers = []
    while (a := pro.take(selection, f"p{len(workers)}")) is not None:
        pro.submit(a, answers_for(a))
        workers.append(a)
    assert all(h.status == HitStatus.COMPLETE for h in selection.hits.all())
    for a in workers:
        a.refresh_from_db()
        assert len(a.provider_assignment_id) == 24 and len(a.worker.external_id) == 24
    first, second, *rest = workers

    # Decisions: the approval's answer is dropped, the rejection's is a 502.
    standin.lose("POST", rf"submissions/{HEX24}/transition/")
    assignment_approve(assignment=first)
    standin.lose("POST", rf"submissions/{HEX24}/transition/", status=502)
    assignment_reject(assignment=second, feedback=LONG)
    assert standin.submissions[pro.session("p0")]["status"] == "APPROVED"
    assert standin.submissions[pro.session("p1")]["status"] == "REJECTED"
    for a in rest:
        a.refresh_from_db()
        assignment_approve(assignment=a)

    # A bonus: the set-up's answer and the payment's answer are lost.
    standin.lose("POST", "submissions/bonus-payments/")
    with pytest.raises(Exception, match="may have taken effect"):
        worker_bonus(assignment=first, amount="0.30", reason="Careful work")
    standin.lose("POST", rf"bulk-bonus-payments/{HEX24}/pay/", status=502)
    worker_bonus(assignment=first, amount="0.30", reason="Careful work")
    worker_bonus(assignment=first, amount="0.30", reason="Careful work")
    assert [p["amount"] for p in standin.payments] == [30]

    # The median (five minutes) shows the reward under the minimum: the adjustment is paid
    # once per counted participant, the first payment's answer lost.
    standin.lose("POST", rf"bulk-bonus-payments/{HEX24}/pay/")
    review = prolific_pay_adjust(batch=selection, client=pro.client)
    assert review.to_pay == [] and review.underpaid
    adjusted = Bonus.objects.filter(kind="pay_adjustment", sent_at__isnull=False)
    counted = 1 + len(rest)  # the rejected participant is not owed
    assert adjusted.count() == counted
    prolific_pay_adjust(batch=selection, client=pro.client)
    assert len(standin.payments) == 1 + counted

    # More places (the PATCH's answer lost) and a message (the bulk send's answer lost).
    standin.lose("PATCH", rf"studies/{HEX24}/")
    places = study["total_available_places"]
    hit_add_assignments(hit=selection.hits.first(), count=1)
    assert study["total_available_places"] == places + 1
    standin.lose("POST", "messages/bulk/")
    people = [Worker.objects.get(pk=first.worker_id)]
    workers_notify(workers=people, subject="Thank you", message="A bonus was paid.")
    assert len(standin.messages) == 1

    # Every money figure agrees with Prolific's.
    batch_sync(batch=selection)
    [row] = prolific_reconcile(client=pro.client).rows
    assert row.matches, row
    assert row.bonuses_here == Decimal("0.30") + sum(b.amount for b in adjusted)
    assert row.rewards_here == selection.reward * counted
    assert not RemoteCall.objects.exclude(state="done").exists()
    assert 1_000_000 - standin.balance == spent_on_publishing  # published once

    # Stage 3 on Prolific keeps stage 2's participants out, then the export.
    selection_done_factory(paired_run)
    verification = pro.publish(
        batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="prolific", items_per_hit=100
        )
    )
    study3 = standin.studies[verification.provider_hit_type_id]
    blocked = next(f for f in study3["filters"] if f["filter_id"] == "participant_group_blocklist")
    pool = set(blocked["selected_values"])
    assert any(pro.pid("p0") in standin.groups[g] for g in pool)
    verifiers = []
    while (a := pro.take(verification, f"v{len(verifiers)}")) is not None:
        right = {
            f"q{q.position}": ("right" if q.swapped else "left") for q in a.hit.questions.all()
        }
        pro.submit(a, right)
        verifiers.append(a)
    assert len(verifiers) >= 2
    from annotation.flows.bison.services.export import bison_export_start

    job = run_on_commit(bison_export_start, run=paired_run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    folder = Path(Export.objects.get(pk=job.result["export"]).path)
    folder = folder if folder.is_dir() else folder.parent
    text = "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())
    assert not [pid for pid in pro.pids.values() if pid in text]
