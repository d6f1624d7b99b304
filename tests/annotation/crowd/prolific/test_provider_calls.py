"""The Prolific calls the other tests do not make: the settings check (users/me, balance),
starting a paused study again, taking a participant out of the block group, and messages."""

import io

import pytest
from django.core.management import call_command

from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Worker
from annotation.services.money.batch_extension import batch_extend
from annotation.services.runs.batches import batch_create
from annotation.services.work.worker_actions import worker_block, worker_unblock, workers_notify

pytestmark = pytest.mark.django_db


def published(pro, run):
    return pro.publish(
        batch_create(run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=2)
    )


def test_prolific_check_reads_the_token_user_and_the_workspace(pro):
    out, err = io.StringIO(), io.StringIO()
    call_command("prolific_check", stdout=out, stderr=err)
    assert f"user {pro.standin.researcher}" in out.getvalue() and "USD" in out.getvalue()
    assert err.getvalue() == ""
    pro.standin.currency = "GBP"
    call_command("prolific_check", stdout=out, stderr=err)
    assert "publishing will be refused" in err.getvalue()
    assert ("GET", "users/me/") in pro.standin.calls


def test_extending_starts_a_paused_study_and_refuses_a_stopped_one(pro, paired_run):
    batch = published(pro, paired_run)
    study = pro.standin.studies[batch.provider_hit_type_id]
    study["status"] = "PAUSED"  # paused at Prolific (its dashboard)
    batch_extend(batch=batch, seconds=3600)
    assert study["status"] == "ACTIVE"
    assert ("POST", f"studies/{study['id']}/transition/") in pro.standin.calls
    study["status"] = "COMPLETED"
    with pytest.raises(ServiceError, match="more places"):
        batch_extend(batch=batch, seconds=3600)


def test_unblocking_takes_the_participant_out_of_the_block_group(pro, paired_run):
    batch = published(pro, paired_run)
    a = pro.take(batch, "appeal")
    pro.submit(a, {f"q{q.position}": "none" for q in a.hit.questions.all()})
    worker_block(worker=a.worker, reason="too fast")
    from annotation.models import BlockQualification

    block = BlockQualification.objects.get(provider="prolific").qualification_id
    assert pro.pid("appeal") in pro.standin.groups[block]
    worker_unblock(worker=Worker.objects.get(pk=a.worker_id), reason="appeal upheld")
    assert pro.pid("appeal") not in pro.standin.groups[block]
    assert ("DELETE", f"participant-groups/{block}/participants/") in pro.standin.calls


def test_messages_go_through_prolifics_bulk_messages_per_study(pro, paired_run):
    batch = published(pro, paired_run)
    people = []
    for name in ("m1", "m2"):
        a = pro.take(batch, name)
        pro.submit(a, {f"q{q.position}": "none" for q in a.hit.questions.all()})
        people.append(Worker.objects.get(pk=a.worker_id))
    sent = workers_notify(workers=people, subject="Thank you", message="A bonus follows.")
    assert sent == 2
    assert {m["recipient_id"] for m in pro.standin.messages} == {pro.pid("m1"), pro.pid("m2")}
    assert all(m["study_id"] == batch.provider_hit_type_id for m in pro.standin.messages)
    assert workers_notify(workers=people, subject="Thank you", message="A bonus follows.") == 0
    assert len(pro.standin.messages) == 2  # once per person
