"""Decisions read their own rows, never the event log (issue 49): each is taken, the whole log
is deleted, and the same decision comes out again (a second send is refused, a count holds)."""

import secrets
import string

import pytest

from annotation.crowd.mturk import sync as mturk_sync
from annotation.crowd.panel.models import Finish
from annotation.crowd.panel.selectors import panel_figures
from annotation.crowd.panel.services import participant_finish
from annotation.crowd.prolific import sync as prolific_sync
from annotation.crowd.prolific.models import RefusedSubmission, UnknownStatus
from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    Assignment,
    AssignmentState,
    Event,
    EventAction,
    RefusedAnswers,
    RejectionFeedback,
    SlotsAdded,
    WorkerNotice,
    WorkerNoticeState,
)
from annotation.providers import provider_for
from annotation.selectors.runs.dashboard import dashboard_runs
from annotation.selectors.runs.run_page import batch_progress
from annotation.services.money.batch_extension import hit_add_assignments
from annotation.services.money.spend import committed_last_day
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work import decisions
from annotation.services.work.decisions import assignment_mark
from annotation.services.work.worker_actions import workers_notify
from pipeline.simulate import WorkerProfile

pytestmark = pytest.mark.django_db


def _forget_the_log() -> None:
    Event.objects.all().delete()


def _mturk_id() -> str:
    """MTurk's shape: 30 upper-case letters and digits."""
    return "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(30))


def _prolific_batch(pro, run):  # type: ignore[no-untyped-def]
    return pro.publish(
        batch_create(run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=2)
    )


def _simulated(run, **options):  # type: ignore[no-untyped-def]
    batch = batch_publish(
        batch=batch_create(
            run=run, stage=BisonStage.SELECTION, provider="simulated", limit=4, **options
        )
    )
    simulate_crowd(batch=batch, workers=2, profile=WorkerProfile(accuracy=0.9))
    return batch


def test_the_daily_cap_counts_added_slots_from_their_rows(pro, paired_run):
    batch = _prolific_batch(pro, paired_run)
    hit = batch.hits.first()
    slot = provider_for("prolific").slot_cost(batch=batch)
    before = committed_last_day()
    hit_add_assignments(hit=hit, count=2)
    after = committed_last_day()
    # Two slots more, counted once: not again in the HIT's capacity, which they raised.
    assert after == before + 2 * slot
    assert SlotsAdded.objects.get(hit=hit).extra_total == 2
    _forget_the_log()
    assert committed_last_day() == after
    # The row is what counts the added slots.
    SlotsAdded.objects.all().delete()
    assert committed_last_day() == before


def test_a_message_is_sent_once_to_a_worker_without_the_log(pro, paired_run):
    batch = _prolific_batch(pro, paired_run)
    worker = pro.take(batch, "ann").worker
    assert workers_notify(workers=[worker], subject="Thanks", message="More soon.") == 1
    sent = len(pro.standin.messages)
    assert sent >= 1
    assert WorkerNotice.objects.get(worker=worker).state == WorkerNoticeState.SENT
    _forget_the_log()
    assert workers_notify(workers=[worker], subject="Thanks", message="More soon.") == 0
    assert len(pro.standin.messages) == sent
    # Another message is another notice.
    assert workers_notify(workers=[worker], subject="Thanks", message="Tomorrow.") == 1


def test_prolific_unknown_statuses_and_refused_work_are_kept_once(pro, paired_run):
    batch = _prolific_batch(pro, paired_run)
    assignment = pro.take(batch, "ann")
    submission = pro.session("ann")
    for _ in range(2):
        prolific_sync.status_unknown(
            batch=batch, submission_id=submission, status="ON HOLD", source="hook"
        )
        prolific_sync._refused_once(assignment=assignment, error="the HIT is full")
        assert Event.objects.filter(action=EventAction.PROLIFIC_STATUS_UNKNOWN).count() == 1
        assert Event.objects.filter(action=EventAction.PROLIFIC_WORK_REFUSED).count() == 1
    _forget_the_log()
    prolific_sync.status_unknown(
        batch=batch, submission_id=submission, status="ON HOLD", source="poll"
    )
    prolific_sync._refused_once(assignment=assignment, error="the HIT is full")
    assert not Event.objects.exists()  # the rows said: already kept
    assert UnknownStatus.objects.get(batch=batch).source == "hook"
    assert RefusedSubmission.objects.get().assignment_id == assignment.pk


def test_refused_answers_are_listed_once_and_counted_from_their_rows(paired_run):
    batch = _simulated(paired_run)
    hit = batch.hits.first()
    remote = _mturk_id()
    for _ in range(2):
        mturk_sync._refused(
            hit=hit, remote_id=remote, worker_id=_mturk_id(), status="Submitted", exc=ValueError()
        )
    assert Event.objects.filter(action=EventAction.MTURK_ANSWERS_REFUSED).count() == 1
    _forget_the_log()
    mturk_sync._refused(
        hit=hit, remote_id=remote, worker_id=_mturk_id(), status="Submitted", exc=ValueError()
    )
    assert not Event.objects.exists()
    assert RefusedAnswers.objects.filter(batch=batch).count() == 1
    rows = {row["batch"].pk: row for row in dashboard_runs()[0]["batches"]}
    assert rows[batch.pk]["refused"] == 1


def test_the_last_rejection_message_is_read_from_its_row(paired_run):
    batch = _simulated(paired_run)
    assignment = Assignment.objects.filter(hit__batch=batch).first()
    assert mturk_sync._last_feedback(assignment) == "Rejected after review."
    assignment_mark(
        assignment=assignment, state=AssignmentState.REJECTED, source="requester", feedback="first"
    )
    assignment_mark(
        assignment=assignment, state=AssignmentState.APPROVED, source="requester", feedback="ok"
    )
    assignment_mark(
        assignment=assignment, state=AssignmentState.REJECTED, source="requester", feedback="again"
    )
    _forget_the_log()
    assert mturk_sync._last_feedback(assignment) == "again"
    assert RejectionFeedback.objects.count() == 1


def test_a_participants_finish_is_kept_once_per_outcome(paired_run):
    batch = _simulated(paired_run)
    worker = Assignment.objects.filter(hit__batch=batch).first().worker
    participant_finish(batch=batch, worker=worker, outcome="completed", stopped=False)
    _forget_the_log()
    participant_finish(batch=batch, worker=worker, outcome="completed", stopped=True)
    participant_finish(batch=batch, worker=worker, outcome="screened_out", stopped=False)
    assert list(Event.objects.values_list("data__outcome", flat=True)) == ["screened_out"]
    assert Finish.objects.get(outcome="completed").stopped is False
    assert panel_figures(batch=batch).finished == {"completed": 1, "screened_out": 1}


def test_the_run_pages_chart_counts_submissions_from_the_assignments(paired_run):
    batch = _simulated(paired_run, assignments_per_hit=2)
    submitted = Assignment.objects.filter(hit__batch=batch, submitted_at__isnull=False)
    (progress,) = batch_progress(paired_run)
    assert len(progress["points"]) == submitted.count() > 0
    _forget_the_log()
    assert batch_progress(paired_run) == [progress]
    batch.refresh_from_db()
    last = max(submitted.values_list("submitted_at", flat=True)) - batch.published_at
    assert progress["last"] == round(last.total_seconds() / 60, 1)


def test_a_redo_slot_is_counted_once_per_rejected_assignment(pro, paired_run):
    batch = _prolific_batch(pro, paired_run)
    assignment = pro.take(batch, "ann")
    before = committed_last_day()
    for _ in range(2):  # a repeated request: the provider's token added nothing the second time
        decisions._redo_added(assignment)
    assert committed_last_day() == before + provider_for("prolific").slot_cost(batch=batch)
    _forget_the_log()
    assert SlotsAdded.objects.get().redo_id == assignment.pk
