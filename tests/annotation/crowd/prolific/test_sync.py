"""Synchronising with Prolific (annotation/crowd/prolific/sync.py), against the stand-in of its API (tests/annotation/crowd/prolific/standin.py): returned and
timed-out submissions free their slot, work counts once Prolific says it is completed, awaiting
review sets Prolific's deadline, and `prolific_sync` puts counted participants in their pool's
group."""

import pytest

from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, AssignmentState, PoolQualification
from annotation.selectors.counting import counted
from annotation.services.runs.batches import batch_sync
from annotation.services.work.decisions import assignment_approve
from tests.annotation.crowd.prolific.test_provider import LONG, answers_for, draft

pytestmark = pytest.mark.django_db


def test_returned_and_timed_out_free_the_slot_at_once_and_late_work_never_counts(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    capacity = sum(h.capacity for h in batch.hits.all())
    returned = pro.take(batch, "ret")
    timed = pro.take(batch, "late")
    assert returned.hit_id != timed.hit_id
    pro.standin.return_submission(pro.session("ret"))
    pro.standin.time_out(pro.session("late"))
    assert batch_sync(batch=batch) == 2
    assert batch_sync(batch=batch) == 0  # seen again: nothing more
    for a in (returned, timed):
        a.refresh_from_db()
        assert a.state == AssignmentState.ABANDONED
    # The timed-out participant posts anyway: refused, nothing counts.
    late = pro.browsers[pro.pid("late")].post(
        f"/prolific/assignment/{timed.pk}/", answers_for(timed)
    )
    assert late.status_code == 409
    assert not Assignment.objects.filter(counted(), pk=timed.pk).exists()
    # Every slot can still be filled by others, and never more than every slot.
    done = 0
    for n in range(capacity + 3):
        a = pro.take(batch, f"p{n}")
        if a is None:
            continue
        pro.submit(a, answers_for(a))
        done += 1
    assert done == capacity
    assert Assignment.objects.filter(counted(), hit__batch=batch).count() == capacity
    for hit in batch.hits.all():
        assert hit.assignments.filter(counted()).count() <= hit.capacity


def test_awaiting_review_sets_prolifics_deadline_and_the_review_page_asks_a_category(
    pro, paired_run, admin_client
):
    from annotation.models import Review

    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "reviewed")
    pro.submit(a, answers_for(a))
    batch_sync(batch=batch)
    a.refresh_from_db()
    assert a.auto_approve_at is not None
    assert (a.auto_approve_at - a.submitted_at).days == 21
    review = Review.objects.create(assignment=a, reasons=[{"position": 0}])
    page = admin_client.get(f"/review/{review.pk}/").content.decode()
    assert 'id="category"' in page and "LOW_EFFORT" in page and 'minlength="100"' in page
    assert "Prolific pays this work on its own" in page
    short = admin_client.post(
        f"/review/{review.pk}/",
        {"decision": "reject", "category": "LOW_EFFORT", "feedback": "too short"},
    )
    assert short.status_code == 400 and "at least 100 characters" in short.content.decode()
    done = admin_client.post(
        f"/review/{review.pk}/",
        {"decision": "reject", "category": "FAILED_CHECK", "feedback": LONG.split(": ", 1)[1]},
    )
    assert done.status_code == 302
    sub = pro.standin.submissions[pro.session("reviewed")]
    assert sub["status"] == "REJECTED"


def test_work_counts_only_once_synchronisation_sees_the_submission_completed(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "counted")
    assert not a.confirmed  # a claim holds its HIT, unconfirmed
    browser = pro.browsers[pro.pid("counted")]
    response = browser.post(f"/prolific/assignment/{a.pk}/", answers_for(a))
    assert response.status_code == 302
    a.refresh_from_db()
    assert a.state == AssignmentState.SUBMITTED and not a.confirmed
    assert not Assignment.objects.filter(counted(), pk=a.pk).exists()
    with pytest.raises(ServiceError, match="not confirmed"):
        assignment_approve(assignment=a)
    # Still ACTIVE at Prolific (the participant never reached the completion URL): nothing.
    assert batch_sync(batch=batch) == 0
    pro.complete_at_prolific(pro.pid("counted"), response["Location"])
    assert batch_sync(batch=batch) == 1
    assert Assignment.objects.filter(counted(), pk=a.pk).exists()


def test_the_sync_command_puts_counted_participants_in_their_pool_group(pro, paired_run):
    from django.core.management import call_command

    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "pooled")
    browser = pro.browsers[pro.pid("pooled")]
    done = browser.post(f"/prolific/assignment/{a.pk}/", answers_for(a))
    pro.complete_at_prolific(pro.pid("pooled"), done["Location"])
    call_command("prolific_sync", "--batch", str(batch.pk))
    pool = PoolQualification.objects.get(run=paired_run, stage=BisonStage.SELECTION)
    assert pro.pid("pooled") in pro.standin.groups[pool.qualification_id]
