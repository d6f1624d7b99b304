"""A worker submits their answers: from the form's values to `Answer` rows, in the order the
checks run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from annotation.errors import AnswerError, NotAssignmentHolder, PoolConflict, ServiceError, TooLate
from annotation.models import (
    Answer,
    Assignment,
    AssignmentState,
    Batch,
    EventAction,
    Hit,
    PoolMembership,
    Question,
    Worker,
)
from annotation.providers import provider_for
from annotation.selectors.counting import pool_bar_reason
from annotation.selectors.work.task_page import hit_questions
from annotation.services.events import event_record
from annotation.services.work.drafts import draft_consume
from annotation.services.work.recount import batch_refresh_status, hit_recount
from annotation.services.work.review_opening import review_open_if_needed
from annotation.services.work.slots import (
    LATE,
    active_assignments,
    claim_holds,
    claims_unconfirmed,
    kept_work,
    late_reason,
)
from annotation.tasktypes import task_type_for


@dataclass(frozen=True)
class SubmitResult:
    assignment: Assignment
    created: bool


def assignment_submit(
    *,
    assignment_id: int,
    worker: Worker,
    answers: Mapping[str, str],
    submitted_at: datetime | None = None,
    check_pool: bool = True,
    started_at: datetime | None = None,
) -> SubmitResult:
    """Validate and store a worker's answers (keys `q<position>`). Idempotent on resubmission.

    Unconfirmed work (a browser's claim) is refused from a worker barred from the stage by
    confirmed work (`pool_bar_reason`), unless `check_pool` is off: the provider's own record,
    whose pool rules apply on confirmation."""
    answers = {str(k): str(v) for k, v in answers.items()}
    with transaction.atomic():
        result, refresh = _submit(
            assignment_id=assignment_id,
            worker=worker,
            answers=answers,
            submitted_at=submitted_at,
            started_at=started_at,
            check_pool=check_pool,
        )
    if refresh:  # after the commit, so the last two HITs' submitters cannot both miss it
        batch_refresh_status(batch=result.assignment.hit.batch)
    return result


def _submit(
    *,
    assignment_id: int,
    worker: Worker,
    answers: dict[str, str],
    submitted_at: datetime | None,
    started_at: datetime | None,
    check_pool: bool,
) -> tuple[SubmitResult, bool]:
    """`assignment_submit` inside its transaction; with whether to look whether the batch is
    complete."""
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("hit__batch__run", "worker")
        .get(pk=assignment_id)
    )
    _check_holder(assignment, worker)
    batch = assignment.hit.batch
    if assignment.state != AssignmentState.ACCEPTED:
        return _submit_again(assignment, answers), False
    if assignment.confirmed or claims_unconfirmed(batch):  # claimed here: our clock
        _check_in_time(assignment=assignment, now=submitted_at or timezone.now())
    if assignment.confirmed:  # joined its pool at the claim
        membership = PoolMembership.objects.filter(run=batch.run, worker=worker).first()
        _check_pool(batch, worker, None if membership is None else membership.stage)
    elif check_pool:  # in no pool until confirmed: only confirmed work bars it
        reason = pool_bar_reason(run=batch.run, worker=worker, stage=batch.stage)
        if reason:
            raise PoolConflict(reason)
    questions, rows = _answer_rows(assignment, batch.stage, answers)
    Answer.objects.bulk_create(rows)
    _mark_submitted(assignment, submitted_at, started_at)
    assignment.save(update_fields=["state", "submitted_at", "started_at"])
    draft_consume(assignment_id=assignment.pk)
    event_record(
        action=EventAction.ASSIGNMENT_SUBMITTED,
        run=batch.run,
        batch=batch,
        assignment=assignment,
        worker=worker,
        data={"answers": len(rows), "confirmed": assignment.confirmed},
    )
    if assignment.confirmed:
        hit_recount(hit=assignment.hit)
        review_open_if_needed(assignment=assignment, questions=questions, answers=rows)
    return SubmitResult(assignment=assignment, created=True), True


# --- the checks, in the order the submit runs them -----------------------------------------


def _check_holder(assignment: Assignment, worker: Worker) -> None:
    if assignment.worker_id != worker.pk:
        raise NotAssignmentHolder(
            f"assignment {assignment.pk} is not held by worker {worker.external_id}"
        )


def _submit_again(assignment: Assignment, answers: dict[str, str]) -> SubmitResult:
    """A second delivery of the same answers is no error; other answers are."""
    if assignment.state == AssignmentState.ABANDONED:
        raise ServiceError(f"assignment {assignment.pk} was abandoned and cannot be submitted")
    if stored_answers(assignment) == answers:
        return SubmitResult(assignment=assignment, created=False)
    raise ServiceError(f"assignment {assignment.pk} was already submitted with different answers")


def _check_in_time(*, assignment: Assignment, now: datetime) -> None:
    """Refuse local work after its claim ran out or its batch expired, and never let a HIT
    hold more work than its capacity. A first claim past its short hold (but within the
    assignment duration) is still taken if its slot is free. A platform that confirms work
    keeps its own clock: work it reports as submitted was accepted there."""
    hit = assignment.hit
    batch = hit.batch
    if provider_for(batch.provider).confirms_remotely:
        return
    _check_clock(assignment, batch, now)
    Hit.objects.select_for_update().filter(pk=hit.pk).first()  # one submitter at a time
    others = hit.assignments.exclude(pk=assignment.pk)
    counted_n = others.filter(kept_work(batch)).count()
    if counted_n >= hit.capacity or claim_holds(assignment, now, batch):
        _check_slots(hit, counted_n, None)
        return
    _check_slots(hit, counted_n, others.filter(active_assignments(now, batch)).count())


def _check_clock(assignment: Assignment, batch: Batch, now: datetime) -> None:
    reason = late_reason(assignment, batch, now)
    if reason is not None:
        raise TooLate(reason)


def _check_slots(hit: Hit, counted_n: int, active_n: int | None) -> None:
    """Counted work always holds its slot; `active_n` (None: the claim holds its own slot) is
    the other assignments holding one."""
    if counted_n >= hit.capacity:
        raise TooLate("this task already has all the answers it needs")
    if active_n is not None and active_n >= hit.capacity:
        raise TooLate(LATE)


def _check_pool(batch: Batch, worker: Worker, stage: str | None) -> None:
    if stage != batch.stage:
        raise PoolConflict(
            f"worker {worker.external_id} is not in the {batch.stage} pool of run {batch.run_id}"
        )


# --- the answers: read from the form's values, stored ----------------------------------------


def _answer_rows(
    assignment: Assignment, stage: str, answers: dict[str, str]
) -> tuple[list[Question], list[Answer]]:
    """The HIT's questions and the answers read from `answers` (AnswerError if one is missing
    or names no question of the HIT)."""
    task = task_type_for(stage)
    questions = hit_questions(hit_id=assignment.hit_id)
    expected = {f"q{q.position}": q for q in questions}
    missing = [k for k in expected if k not in answers or not answers[k]]
    if missing:
        raise AnswerError(
            f"{len(missing)} of {len(expected)} questions are not answered",
            record=f"assignment {assignment.pk}",
            field=", ".join(missing),
        )
    extra = sorted(set(answers) - set(expected))
    if extra:
        raise AnswerError(
            "answers for questions that are not in this HIT",
            record=f"assignment {assignment.pk}",
            field=", ".join(extra),
        )
    rows = []
    for key, question in expected.items():
        parsed = task.parse_answer(question=question, value=answers[key])
        rows.append(
            Answer(
                assignment=assignment,
                question=question,
                choice=parsed.choice,
                label=parsed.label,
                caption=parsed.caption,
                details=parsed.details or {},
                raw=answers[key],
            )
        )
    return questions, rows


def _mark_submitted(
    assignment: Assignment, submitted_at: datetime | None, started_at: datetime | None
) -> None:
    assignment.state = AssignmentState.SUBMITTED
    assignment.submitted_at = submitted_at or timezone.now()
    if started_at is not None:  # the browser's word: kept within accept..submit
        assignment.started_at = min(
            max(started_at, assignment.accepted_at), assignment.submitted_at
        )


def answers_read(*, hit_id: int, stage: str, answers: dict[str, str]) -> list[Answer]:
    """What a submit of `answers` to HIT `hit_id` would store, unsaved, or the AnswerError it
    would raise: a researcher's preview checks its answers with the submit's own reading."""
    return _answer_rows(Assignment(hit_id=hit_id), stage, answers)[1]


def stored_answers(assignment: Assignment) -> dict[str, str]:
    """The values a worker submitted, keyed as they were sent (q0, q1, …)."""
    return {
        f"q{position}": raw
        for position, raw in assignment.answers.values_list("question__position", "raw")
    }
