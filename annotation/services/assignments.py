"""Workers claiming HITs, submitting answers, and their work being reviewed."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.crowd import PROVIDERS, provider_for
from annotation.errors import (
    AnswerError,
    NotAssignmentHolder,
    PoolConflict,
    ServiceError,
    TooLate,
)
from annotation.flow_registry import disjoint_stages
from annotation.models import (
    Answer,
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    Hit,
    HitStatus,
    PoolMembership,
    Question,
    Review,
    Run,
    Worker,
)
from annotation.selectors.counting import (
    COUNTED_STATES,
    counted,
    earlier_stages,
    pool_bar_reason,
)
from annotation.selectors.work import hit_questions
from annotation.services import worker_sql
from annotation.services.events import event_record
from annotation.services.gold import gold_seen_before
from annotation.services.images import image_seen_before
from annotation.services.notifications import owner_notify
from annotation.services.runs import run_status_follow
from annotation.tasktypes import task_type_for


def worker_id_normalise(external_id: str, *, provider: str) -> str:
    """One spelling per person before any comparison: Unicode NFKC, invisible and format
    characters (zero-width space, BOM, soft hyphen, ...) removed, spaces collapsed; ids of
    server-side providers case-folded (a platform's own ids are kept as it spells them: they
    are sent back to it; `CrowdProvider.case_sensitive_ids`)."""
    text = unicodedata.normalize("NFKC", str(external_id))
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cc", "Cs", "Co", "Cn"))
    text = " ".join(text.split())
    crowd = PROVIDERS.get(provider)
    return text if crowd is not None and crowd.case_sensitive_ids else text.casefold()


def worker_get_or_create(*, provider: str, external_id: str) -> Worker:
    external_id = worker_id_normalise(external_id, provider=provider)
    if not external_id or len(external_id) > 100:
        raise ServiceError("a worker id must be 1 to 100 characters")
    worker, _ = Worker.objects.get_or_create(provider=provider, external_id=external_id)
    return worker


def pool_join(*, run: Run, worker: Worker, stage: str) -> PoolMembership:
    """Put `worker` in `stage`'s pool of `run`, or refuse if they work in another stage."""
    membership, created = PoolMembership.objects.get_or_create(
        run=run, worker=worker, defaults={"stage": stage}
    )
    if membership.stage != stage:
        raise PoolConflict(
            f"worker {worker.external_id} already works on {membership.get_stage_display()} "
            f"in run {run.pk}; the two stages' workers must be different people"
        )
    if created:
        event_record(action="pool.joined", run=run, worker=worker, data={"stage": stage})
    return membership


def _pool_enter(*, batch: Batch, worker: Worker) -> None:
    """A claim's pool rule. A confirmed claim (local work) joins the stage's pool at once, or
    is refused for another stage's. A claim that starts unconfirmed (`claims_unconfirmed`:
    an id the provider has yet to confirm, which anyone may type) joins no pool: it must not
    bar the id's real owner from another stage. It is refused only where confirmed work
    decided (`pool_bar_reason`); its worker joins on confirmation (`assignment_confirm`)."""
    if claims_unconfirmed(batch):
        reason = pool_bar_reason(run=batch.run, worker=worker, stage=batch.stage)
        if reason:
            raise PoolConflict(reason)
    else:
        pool_join(run=batch.run, worker=worker, stage=batch.stage)


def first_claim_seconds(batch: Batch) -> int:
    """How long a worker with nothing submitted in `batch` holds a claimed HIT (so made-up or
    idle claimants cannot starve a batch): option `first_claim_seconds`, by default a minute
    per question with a 10-minute floor, never more than the assignment duration."""
    default = max(600, 60 * batch.items_per_hit)
    seconds = int(batch.options.get("first_claim_seconds", default))
    return min(seconds, batch.assignment_duration_seconds)


def _claim_holds(assignment: Assignment, now: datetime, batch: Batch) -> bool:
    """Whether a confirmed, accepted assignment within its duration still holds its slot: the
    same rule as `_active_assignments`, with the worker's earlier work asked only when the
    short first-claim hold has passed."""
    if assignment.accepted_at >= now - timedelta(seconds=first_claim_seconds(batch)):
        return True
    return Assignment.objects.filter(
        worker_id=assignment.worker_id, hit__batch=batch, state__in=COUNTED_STATES
    ).exists()


def claims_unconfirmed(batch: Batch) -> bool:
    """Whether `batch`'s claims start unconfirmed and hold their slots until the provider
    confirms them (`CrowdProvider.claims_unconfirmed`, e.g. a panel without an API)."""
    return provider_for(batch.provider).claims_unconfirmed


def _kept(batch: Batch) -> Q:
    """Submitted work holding its slot for good: counted work, and where claims start
    unconfirmed (`claims_unconfirmed`), work waiting for the provider's confirmation too."""
    if claims_unconfirmed(batch):
        return Q(state__in=COUNTED_STATES, excluded=False)
    return counted()


def _mine(batch: Batch) -> Q:
    """The rows a claim of `batch` makes: confirmed ones, or where claims start unconfirmed
    (`claims_unconfirmed`), any. Other unconfirmed rows (a browser's word only) never hold a
    slot."""
    return Q() if claims_unconfirmed(batch) else Q(confirmed=True)


def _active_assignments(now: datetime, batch: Batch) -> Q:
    """Assignments holding a slot of their HIT: kept work (`_kept`) and claims still within
    their time (the assignment duration; the shorter first-claim time for a worker who has
    submitted nothing in the batch)."""
    fresh = now - timedelta(seconds=batch.assignment_duration_seconds)
    first = now - timedelta(seconds=first_claim_seconds(batch))
    has_submitted = Exists(
        Assignment.objects.filter(
            worker=OuterRef("worker"), hit__batch=batch, state__in=COUNTED_STATES
        )
    )
    return _kept(batch) | (
        Q(state=AssignmentState.ACCEPTED, accepted_at__gte=fresh)
        & _mine(batch)
        & (Q(accepted_at__gte=first) | has_submitted)
    )


def assignment_claim_next(
    *, batch: Batch, worker: Worker, now: datetime | None = None
) -> Assignment | None:
    """Give `worker` their open assignment in `batch`, or a new one on a HIT they have not done.

    HIT rows are locked while a slot is taken so two workers never fill the same last slot;
    the worker's row is locked first, so one worker's concurrent claims (a double click, two
    tabs) run one after the other and the second finds the first's assignment.
    """
    now = now or timezone.now()
    if worker.blocked:
        raise ServiceError(f"worker {worker.external_id} is blocked")
    if batch.status == BatchStatus.PAUSED and not batch.past_lifetime(now):
        # No new claim while paused, but work in progress may finish: their open one.
        return (
            Assignment.objects.filter(
                hit__batch=batch, worker=worker, state=AssignmentState.ACCEPTED
            )
            .filter(_active_assignments(now, batch))
            .first()
        )
    if batch.status != BatchStatus.PUBLISHED or batch.past_lifetime(now):
        return None
    with transaction.atomic():
        if CLAIM_SQL and connection.vendor == "postgresql":
            return _claim_sql(batch=batch, worker=worker, now=now)
        Worker.objects.select_for_update().filter(pk=worker.pk).first()
        _pool_enter(batch=batch, worker=worker)
        # Their open claim, if it still holds its slot (`_active_assignments` for one row).
        mine = Assignment.objects.filter(
            _mine(batch),
            hit__batch=batch,
            worker=worker,
            state=AssignmentState.ACCEPTED,
            accepted_at__gte=now - timedelta(seconds=batch.assignment_duration_seconds),
        ).first()
        if mine is not None and _claim_holds(mine, now, batch):
            return mine
        active = (
            Assignment.objects.filter(_active_assignments(now, batch), hit=OuterRef("pk"))
            .order_by()
            .values("hit")
            .annotate(n=Count("pk"))
            .values("n")
        )
        candidates = (
            Hit.objects.filter(batch=batch, status=HitStatus.OPEN)
            .exclude(assignments__worker=worker)
            .exclude(judged_before(worker))  # the same items, judged again
            .exclude(gold_seen_before(worker))  # a gold copy of an item they had
            .exclude(image_seen_before(worker))  # an image they had in another HIT
            .annotate(active=Coalesce(Subquery(active), Value(0)))
            .filter(
                active__lt=Coalesce(F("max_assignments"), Value(batch.assignments_per_hit))
                + F("extra_assignments")
            )
            .order_by("position")
        )
        # One HIT row locked at a time, in position order (so claimers never deadlock). First
        # pass: skip rows other claimers hold, so concurrent workers spread over HITs instead
        # of queueing on the first one; when every open row is held, wait for one, so a worker
        # is never told "no work" while a slot remains.
        tried: list[int] = []
        skip = True
        while True:
            hit = (
                candidates.exclude(pk__in=tried)
                .select_for_update(of=("self",), skip_locked=skip)
                .first()
            )
            if hit is None:
                if skip:
                    skip = False
                    continue
                break
            hit.batch = batch  # capacity reads it; the same row
            # Recount under the lock: the annotation may predate another claimer's commit.
            capacity = hit.capacity
            if hit.assignments.filter(_active_assignments(now, batch)).count() >= capacity:
                tried.append(hit.pk)
                continue
            return _claim_take(hit_id=hit.pk, batch=batch, worker=worker, now=now)
    return None


def judged_before(worker: Worker, *, confirmed_only: bool = False) -> Q:
    """HITs (as a filter on Hit) whose items `worker` already had: the HIT they were
    re-offered from (`reoffered_as`) holds an assignment of theirs. With `confirmed_only`,
    only assignments the provider confirmed count (a browser's claim never blocks real work)."""
    rule = Q(reoffer_of__assignments__worker=worker)
    if confirmed_only:  # in one filter(): the same assignment row
        rule &= Q(reoffer_of__assignments__confirmed=True)
    return rule


def same_items_reason(*, hit: Hit, worker: Worker, confirmed_only: bool = False) -> str | None:
    """Why `worker` may not work on `hit` because they had its items before, or None."""
    rule = judged_before(worker, confirmed_only=confirmed_only)
    if not Hit.objects.filter(rule, pk=hit.pk).exists():
        return None
    return (
        f"worker {worker.external_id} already had these items on the HIT they were re-offered "
        "from: nobody judges the same items twice"
    )


def _claim_take(*, hit_id: int, batch: Batch, worker: Worker, now: datetime) -> Assignment:
    assignment = Assignment.objects.create(
        hit_id=hit_id, worker=worker, accepted_at=now, confirmed=not claims_unconfirmed(batch)
    )
    event_record(
        action="assignment.accepted",
        run=batch.run,
        batch=batch,
        assignment=assignment,
        worker=worker,
    )
    return assignment


# PostgreSQL's path for the claim and the submit (services/worker_sql.py); off: the ORM path
# (other databases), which tests also run.
CLAIM_SQL = True
SUBMIT_SQL = True


def _claim_sql(*, batch: Batch, worker: Worker, now: datetime) -> Assignment | None:
    """`assignment_claim_next` in prepared SQL, inside its transaction: the same steps."""
    params: dict[str, Any] = {
        **_slot_params(batch, now),
        "run": batch.run_id,
        "worker": worker.pk,
        "per_hit": batch.assignments_per_hit,
        "tried": [],
    }
    stage, mine = worker_sql.claim_mine(worker_id=worker.pk, params=params)
    if stage != batch.stage:  # not in a pool yet (joins it), or in another stage's (refused)
        _pool_enter(batch=batch, worker=worker)
    if mine is not None:
        return mine
    with connection.cursor() as cursor:
        for skip in (True, False):  # skip rows other claimers hold; then wait for one
            while True:
                cursor.execute(worker_sql.CANDIDATE_SQL + (" SKIP LOCKED" if skip else ""), params)
                row = cursor.fetchone()
                if row is None:
                    break
                hit_id, capacity = row
                # Recount under the lock: the subquery may predate another claimer's commit.
                cursor.execute(worker_sql.RECOUNT_SQL, {**params, "hit": hit_id})
                if cursor.fetchone()[0] >= capacity:
                    params["tried"] = [*params["tried"], hit_id]
                    continue
                return _claim_take(hit_id=hit_id, batch=batch, worker=worker, now=now)
    return None


@dataclass(frozen=True)
class SubmitResult:
    assignment: Assignment
    created: bool


def stored_answers(assignment: Assignment) -> dict[str, str]:
    """The values a worker submitted, keyed as they were sent (q0, q1, …)."""
    return {
        f"q{position}": raw
        for position, raw in assignment.answers.values_list("question__position", "raw")
    }


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
        done = None
        if SUBMIT_SQL and connection.vendor == "postgresql":
            done = _submit_sql(
                assignment_id=assignment_id,
                worker=worker,
                answers=answers,
                submitted_at=submitted_at,
                started_at=started_at,
            )
        if done is None:
            done = _submit_orm(
                assignment_id=assignment_id,
                worker=worker,
                answers=answers,
                submitted_at=submitted_at,
                started_at=started_at,
                check_pool=check_pool,
            )
    result, refresh = done
    if refresh:  # after the commit, so the last two HITs' submitters cannot both miss it
        batch_refresh_status(batch=result.assignment.hit.batch)
    return result


def _submit_orm(
    *,
    assignment_id: int,
    worker: Worker,
    answers: dict[str, str],
    submitted_at: datetime | None,
    started_at: datetime | None,
    check_pool: bool,
) -> tuple[SubmitResult, bool]:
    """`assignment_submit` through the ORM, inside its transaction; with whether to look
    whether the batch is complete."""
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
    event_record(
        action="assignment.submitted",
        run=batch.run,
        batch=batch,
        assignment=assignment,
        worker=worker,
        data={"answers": len(rows), "confirmed": assignment.confirmed},
    )
    if assignment.confirmed:
        hit_recount(hit=assignment.hit)
        _review_open_if_needed(assignment=assignment, questions=questions, answers=rows)
    return SubmitResult(assignment=assignment, created=True), True


def _submit_sql(
    *,
    assignment_id: int,
    worker: Worker,
    answers: dict[str, str],
    submitted_at: datetime | None,
    started_at: datetime | None,
) -> tuple[SubmitResult, bool] | None:
    """`assignment_submit` for a confirmed local claim, in prepared SQL and the same order of
    checks; None (in the same transaction) for anything else, which the ORM path handles.
    The batch can only complete when this HIT did."""
    read = worker_sql.submit_read(assignment_id)
    if read is None:
        return None
    assignment, pool_stage = read
    batch = assignment.hit.batch
    _check_holder(assignment, worker)
    if (
        assignment.state != AssignmentState.ACCEPTED
        or not assignment.confirmed
        or provider_for(batch.provider).confirms_remotely
    ):
        return None
    now = submitted_at or timezone.now()
    _check_clock(assignment, batch, now)
    counted_n, active_n, has_submitted = worker_sql.submit_slots(
        assignment=assignment, params=_slot_params(batch, now)
    )
    holds = has_submitted or assignment.accepted_at >= now - timedelta(
        seconds=first_claim_seconds(batch)
    )
    _check_slots(assignment.hit, counted_n, None if holds else active_n)
    _check_pool(batch, worker, pool_stage)
    questions, rows = _answer_rows(assignment, batch.stage, answers)
    _mark_submitted(assignment, submitted_at, started_at)
    event = {"answers": len(rows), "confirmed": True}
    full = worker_sql.submit_write(assignment=assignment, rows=rows, event=event, now=now)
    if full:
        assignment.hit.status = HitStatus.COMPLETE
    assignment.worker = worker
    _review_open_if_needed(assignment=assignment, questions=questions, answers=rows)
    return SubmitResult(assignment=assignment, created=True), full


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


def _check_pool(batch: Batch, worker: Worker, stage: str | None) -> None:
    if stage != batch.stage:
        raise PoolConflict(
            f"worker {worker.external_id} is not in the {batch.stage} pool of run {batch.run_id}"
        )


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


def answers_read(*, hit_id: int, stage: str, answers: dict[str, str]) -> list[Answer]:
    """What a submit of `answers` to HIT `hit_id` would store, unsaved, or the AnswerError it
    would raise: a researcher's preview checks its answers with the submit's own reading."""
    return _answer_rows(Assignment(hit_id=hit_id), stage, answers)[1]


def _mark_submitted(
    assignment: Assignment, submitted_at: datetime | None, started_at: datetime | None
) -> None:
    assignment.state = AssignmentState.SUBMITTED
    assignment.submitted_at = submitted_at or timezone.now()
    if started_at is not None:  # the browser's word: kept within accept..submit
        assignment.started_at = min(
            max(started_at, assignment.accepted_at), assignment.submitted_at
        )


LATE = (
    "your time for this task ran out, so it may have gone to another worker: your "
    "answers could not be accepted. Please start a new task."
)


def _check_clock(assignment: Assignment, batch: Batch, now: datetime) -> None:
    if batch.status == BatchStatus.EXPIRED or batch.past_lifetime(now):
        raise TooLate("this batch has expired: your answers could not be accepted")
    if assignment.accepted_at < now - timedelta(seconds=batch.assignment_duration_seconds):
        raise TooLate(LATE)


def _check_slots(hit: Hit, counted_n: int, active_n: int | None) -> None:
    """Counted work always holds its slot; `active_n` (None: the claim holds its own slot) is
    the other assignments holding one."""
    if counted_n >= hit.capacity:
        raise TooLate("this task already has all the answers it needs")
    if active_n is not None and active_n >= hit.capacity:
        raise TooLate(LATE)


def _slot_params(batch: Batch, now: datetime) -> dict[str, Any]:
    return {
        "batch": batch.pk,
        "fresh": now - timedelta(seconds=batch.assignment_duration_seconds),
        "first": now - timedelta(seconds=first_claim_seconds(batch)),
        "unconfirmed": claims_unconfirmed(batch),
    }


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
    counted_n = others.filter(_kept(batch)).count()
    if counted_n >= hit.capacity or _claim_holds(assignment, now, batch):
        _check_slots(hit, counted_n, None)
        return
    _check_slots(hit, counted_n, others.filter(_active_assignments(now, batch)).count())


def _review_open_if_needed(
    *, assignment: Assignment, questions: list[Question], answers: list[Answer]
) -> None:
    batch = assignment.hit.batch
    reasons = task_type_for(batch.stage).review_reasons(questions=questions, answers=answers)
    if reasons and not Review.objects.filter(assignment=assignment).exists():
        Review.objects.create(assignment=assignment, reasons=reasons)
        event_record(
            action="review.opened",
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"reasons": reasons},
        )


def assignment_confirm(*, assignment: Assignment, source: str) -> Assignment:
    """Record that the provider has seen `assignment` (MTurk: synchronisation found it for this
    HIT and worker), so its work counts from now on.

    Refused (ServiceError; the row stays unconfirmed) when the HIT already holds its capacity
    of counted work, the worker already holds a confirmed assignment of the HIT, or the HIT
    re-offers items the worker had (confirmed) on the HIT it came from. Confirmed
    but excluded when the worker has confirmed work in an earlier stage of the run; confirming
    earlier-stage work excludes the worker's later-stage work instead.
    """
    with transaction.atomic():
        hit = Hit.objects.select_for_update().select_related("batch__run").get(pk=assignment.hit_id)
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("worker")
            .get(pk=assignment.pk)
        )
        if assignment.confirmed:
            return assignment
        batch, worker = hit.batch, assignment.worker
        run = batch.run
        if Assignment.objects.filter(hit=hit, worker=worker, confirmed=True).exists():
            raise ServiceError(
                f"worker {worker.external_id} already holds a confirmed assignment of HIT {hit.pk}"
            )
        # The provider's record only: an unconfirmed row (a browser's word) never refuses.
        reason = same_items_reason(hit=hit, worker=worker, confirmed_only=True)
        if reason:
            raise ServiceError(reason)
        earlier = Assignment.objects.filter(
            worker=worker,
            hit__batch__run=run,
            hit__batch__stage__in=earlier_stages(batch.stage),
            confirmed=True,
            state__in=COUNTED_STATES,
        )
        excluded = earlier.exists()
        if not excluded and hit.assignments.filter(counted()).count() >= hit.capacity:
            raise ServiceError(f"HIT {hit.pk} already holds {hit.capacity} counted assignments")
        Assignment.objects.filter(pk=assignment.pk).update(confirmed=True, excluded=excluded)
        assignment.confirmed, assignment.excluded = True, excluded
        event_record(
            action="assignment.confirmed",
            run=run,
            batch=batch,
            assignment=assignment,
            worker=worker,
            data={"source": source, "excluded": excluded},
        )
        if not excluded and assignment.state in COUNTED_STATES:
            _pool_take(run=run, worker=worker, stage=batch.stage)
            hit_recount(hit=hit)
            questions = list(hit.questions.select_related("item"))
            answers = list(assignment.answers.order_by("question__position"))
            _review_open_if_needed(assignment=assignment, questions=questions, answers=answers)
    batch_refresh_status(batch=batch)
    return assignment


def _pool_take(*, run: Run, worker: Worker, stage: str) -> None:
    """Put `worker` in `stage`'s pool on confirmed work. Their counted work in later stages of
    the run is excluded and they leave those pools: the stages' workers stay disjoint."""
    group = disjoint_stages(stage)
    later = group[group.index(stage) + 1 :] if stage in group else ()
    if later:
        for other in Assignment.objects.filter(
            counted(), worker=worker, hit__batch__run=run, hit__batch__stage__in=later
        ).select_related("hit__batch"):
            Assignment.objects.filter(pk=other.pk).update(excluded=True)
            event_record(
                action="assignment.excluded",
                run=run,
                batch=other.hit.batch,
                assignment=other,
                worker=worker,
                data={"reason": f"the worker's {stage} work was confirmed"},
            )
            hit_recount(hit=other.hit)
        PoolMembership.objects.filter(run=run, worker=worker, stage__in=later).update(
            stage=stage, granted_at=None
        )
    pool_join(run=run, worker=worker, stage=stage)


def batch_refresh_status(*, batch: Batch) -> Batch:
    """Mark the batch completed when no HIT is open any more."""
    if (
        batch.status == BatchStatus.PUBLISHED
        and not batch.hits.filter(status=HitStatus.OPEN).exists()
    ):
        done = Batch.objects.filter(pk=batch.pk, status=BatchStatus.PUBLISHED).update(
            status=BatchStatus.COMPLETED
        )
        batch.refresh_from_db()
        if done:  # this call completed it (another may have just done so)
            event_record(action="batch.completed", run=batch.run, batch=batch)
            run_status_follow(run=batch.run, batch=batch)
            owner_notify(
                run_id=batch.run_id,
                subject=f"batch {batch.pk} completed",
                body=f"Every HIT of batch {batch.pk} ({batch.get_stage_display()}) has its "
                "answers.",
            )
    return batch


def hit_recount(*, hit: Hit) -> None:
    """Complete a HIT holding its capacity of counted work; reopen it (and its batch) when
    work stopped counting."""
    done = hit.assignments.filter(counted()).count()
    # A HIT whose missing work went to a new HIT (`reoffered_as`) is done with.
    full = done >= hit.capacity or hit.reoffered_as_id is not None
    status = HitStatus.COMPLETE if full else HitStatus.OPEN
    if hit.status != status and hit.status not in (HitStatus.EXPIRED, HitStatus.UNKNOWN):
        Hit.objects.filter(pk=hit.pk).update(status=status)
        hit.status = status
        if status == HitStatus.OPEN:
            reopened = Batch.objects.filter(pk=hit.batch_id, status=BatchStatus.COMPLETED).update(
                status=BatchStatus.PUBLISHED
            )
            if reopened:  # work on offer again: the run's stage is not done after all
                batch = Batch.objects.select_related("run").get(pk=hit.batch_id)
                run_status_follow(run=batch.run, batch=batch)


def assignment_mark(
    *, assignment: Assignment, state: str, source: str, **data: object
) -> Assignment:
    """Record a review outcome decided elsewhere (by us via the provider, or by the provider)."""
    batch = assignment.hit.batch
    with transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk).update(state=state)
        assignment.state = state
        event_record(
            action=f"assignment.{state}",
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"source": source, **data},
        )
        if state == AssignmentState.REJECTED:
            hit_recount(hit=assignment.hit)
    return assignment


def _check_confirmed(assignment: Assignment) -> None:
    if not assignment.confirmed:
        raise ServiceError(
            f"assignment {assignment.pk} is not confirmed by its provider yet; "
            "synchronise the batch first"
        )


def assignment_approve(*, assignment: Assignment) -> Assignment:
    _check_confirmed(assignment)
    if assignment.state == AssignmentState.APPROVED:
        return assignment
    if assignment.state != AssignmentState.SUBMITTED:
        raise ServiceError(f"assignment {assignment.pk} is {assignment.state}, not submitted")
    provider_for(assignment.hit.batch.provider).approve(assignment=assignment)
    return assignment_mark(
        assignment=assignment, state=AssignmentState.APPROVED, source="requester"
    )


def assignment_reject(*, assignment: Assignment, feedback: str) -> Assignment:
    """Reject submitted work; its answers stop counting and the HIT reopens for another worker."""
    if not feedback.strip():
        raise ServiceError("rejecting work needs feedback for the worker")
    _check_confirmed(assignment)
    if assignment.state == AssignmentState.REJECTED:
        return assignment
    if assignment.state != AssignmentState.SUBMITTED:
        raise ServiceError(f"assignment {assignment.pk} is {assignment.state}, not submitted")
    assignment_provider_reject(assignment=assignment, feedback=feedback)
    # Recorded as soon as the provider accepted the rejection, whether or not the HIT grew.
    return assignment_mark(
        assignment=assignment, state=AssignmentState.REJECTED, source="requester", feedback=feedback
    )


def assignment_provider_reject(*, assignment: Assignment, feedback: str) -> bool:
    """Reject `assignment` at its provider and ask for another worker in its place if the
    daily cap allows the slot; whether the HIT grew (if not, its items are to be re-offered)."""
    refused = _redo_refusal(assignment)
    grown = provider_for(assignment.hit.batch.provider).reject(
        assignment=assignment, feedback=feedback, redo=refused is None
    )
    if grown:
        _redo_added(assignment)
    else:
        _cannot_grow(assignment=assignment, refused=refused)
    return grown


def _redo_refusal(assignment: Assignment) -> str | None:
    """Why no paid worker may be asked for in place of `assignment`'s work now (the daily cap,
    checked before the slot is requested), or None. Refused, the HIT's items wait to be
    re-offered (`hits_reoffer` checks the cap again)."""
    hit = assignment.hit
    provider = provider_for(hit.batch.provider)
    return provider.spend_refusal(
        amount=provider.slot_cost(batch=hit.batch),
        what=f"another worker on HIT {hit.pk} in place of assignment {assignment.pk}",
    )


def _redo_added(assignment: Assignment) -> None:
    """Record a paid slot a remote provider added in place of `assignment`'s work: it counts
    in the day's commitments like any assignment added to a HIT."""
    batch = assignment.hit.batch
    if provider_for(batch.provider).remote:
        event_record(
            action="hit.assignments_added",
            run=batch.run,
            batch=batch,
            assignment=assignment,
            data={"hit": assignment.hit_id, "added": 1, "redo": assignment.pk},
        )


def assignment_reversible_until(*, assignment: Assignment) -> datetime | None:
    """The last moment `assignment`'s rejection can be reversed: its provider's window from the
    submission, as the provider counts it (MTurk: 30 days); None when there is no limit."""
    window = provider_for(assignment.hit.batch.provider).reversal_window
    if window is None or assignment.submitted_at is None:
        return None
    return assignment.submitted_at + window


def assignment_reverse_rejection(
    *, assignment: Assignment, feedback: str, now: datetime | None = None
) -> Assignment:
    """Accept (and pay) work that was rejected, e.g. after a worker's appeal: within its
    provider's window from the submission (`assignment_reversible_until`). Its answers count
    again."""
    if not feedback.strip():
        raise ServiceError("reversing a rejection needs a message for the worker")
    if assignment.state == AssignmentState.APPROVED:
        return assignment
    if assignment.state != AssignmentState.REJECTED:
        raise ServiceError(f"assignment {assignment.pk} is {assignment.state}, not rejected")
    until = assignment_reversible_until(assignment=assignment)
    if until is not None and (now or timezone.now()) > until:
        raise ServiceError(
            f"assignment {assignment.pk} was submitted on {assignment.submitted_at:%Y-%m-%d}: "
            f"{assignment.hit.batch.provider} reverses a rejection only until "
            f"{until:%Y-%m-%d %H:%M} UTC, counted from the submission (pay a bonus instead)"
        )
    provider_for(assignment.hit.batch.provider).approve_rejected(
        assignment=assignment, feedback=feedback
    )
    assignment = assignment_mark(
        assignment=assignment,
        state=AssignmentState.APPROVED,
        source="requester",
        reversed_rejection=True,
        feedback=feedback,
    )
    Assignment.objects.filter(pk=assignment.pk).update(excluded=False)
    hit_recount(hit=assignment.hit)
    return assignment


def assignment_exclude(*, assignment: Assignment, reason: str) -> Assignment:
    """Stop counting work that stays paid (e.g. the provider auto-approved it before a
    reviewer rejected it); its HIT takes another worker, or its items are re-offered. (Work
    already held out, e.g. auto-approved under the "exclude" policy, gets its redo now; the
    provider's token makes a repeated redo add nothing.)"""
    batch = assignment.hit.batch
    with transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk).update(excluded=True)
        assignment.excluded = True
        event_record(
            action="assignment.excluded",
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"reason": reason},
        )
        hit_recount(hit=assignment.hit)
    refused = _redo_refusal(assignment)
    if refused is None and provider_for(batch.provider).redo(assignment=assignment):
        _redo_added(assignment)
    else:
        _cannot_grow(assignment=assignment, refused=refused)
    return assignment


def _cannot_grow(*, assignment: Assignment, refused: str | None = None) -> None:
    """Mark the HIT for re-offering (`hits_reoffer`): the provider will not add a worker, or
    (`refused`, why) the daily cap did not allow one."""
    batch = assignment.hit.batch
    Hit.objects.filter(pk=assignment.hit_id, cannot_grow_at__isnull=True).update(
        cannot_grow_at=timezone.now()
    )
    event_record(
        action="hit.cannot_grow",
        run=batch.run,
        batch=batch,
        assignment=assignment,
        data={
            "hit": assignment.hit_id,
            "note": "no assignment is added to this HIT: its items go to a new HIT (or, once "
            "the batch has ended, are reported)",
            **({"refused": refused} if refused else {}),
        },
    )
