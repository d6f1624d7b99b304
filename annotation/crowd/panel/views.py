"""A panel participant's pages: the study link (its id binds the session), the run's
information and consent text, the start page, the next task, the task page (the same task
types and submit as local work), and the end: a completion code per outcome or the panel's
completion URL."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.timezone import now
from django.views.decorators.http import require_http_methods, require_POST

from annotation.crowd.panel import options
from annotation.crowd.panel.arrivals import arrival_refusal
from annotation.crowd.panel.selectors import (
    consented,
    panel_task_page,
    panel_worker,
    submitted_count,
)
from annotation.crowd.panel.services import consent_check, participant_finish, participant_start
from annotation.crowd.panel.session import (
    SESSION,
    consent_accepted,
    session_bind,
    session_bound,
    session_consent,
    session_is_bound,
    session_worker,
)
from annotation.errors import ServiceError, TooLate
from annotation.models import AssignmentState, Batch, BatchStatus, Worker
from annotation.pages.work.drafts import draft_post, draft_session_ended
from annotation.pages.work.forms import task_form_submit
from annotation.pages.work.render import task_render
from annotation.selectors.work.images import page_key
from annotation.selectors.work.invitations import run_consent
from annotation.services.work.claim import assignment_claim_next, claim_wait_seconds
from annotation.tasktypes import task_type_for

NO_ID = (
    "This study link carries no valid participant id. Please open the study again from the "
    "panel's page (the link the panel shows you adds your id)."
)
NOT_OPEN = "This study is not open yet. Please try again later from the panel's page."
PAUSED = "The researchers paused this study for now. Please try again later with the same link."
# A task page reached from a session bound to no participant (it expired, or another browser).
SESSION_ENDED = (
    "Your session has ended, so this page could not be sent. Please open the study again from "
    "the panel's page: your task is still yours, and the answers you gave come back on it."
)
# Every open task is held by someone who just took it and has not answered yet.
HELD = (
    "Every task of this study is taken for now by participants who have just started. One "
    "may come free in about {minutes} minute(s): please keep this page and press the button "
    "then, or open the study link again."
)
# A task that went to someone else while its participant had not answered on it.
TAKEN_OVER = (
    "Nobody answered on this task for a while, so it went to another participant. Please "
    "start a new task."
)


def _message(request: HttpRequest, reason: str, *, status: int, **context: object) -> HttpResponse:
    return render(
        request, "annotation/panel_message.html", {"reason": reason, **context}, status=status
    )


def _batch(batch_id: int) -> Batch:
    return get_object_or_404(
        Batch.objects.select_related("run"), pk=batch_id, provider=options.PROVIDER
    )


@require_http_methods(["GET", "POST"])
def panel_entry(request: HttpRequest, batch_id: int) -> HttpResponse:
    """The study link: `?<id parameter>=<participant id>` binds the session to that id (then
    the address drops it); the consent page first, then the start page."""
    batch = _batch(batch_id)
    param = options.settings_of(batch)["id_param"]
    if request.method == "GET" and param in request.GET:
        participant = options.participant_id_check(request.GET[param])
        if participant is None:
            return _message(request, NO_ID, status=400)
        worker = panel_worker(batch=batch, participant=participant)
        if not session_is_bound(request, batch, participant):  # a new arrival, not a reload
            refusal = arrival_refusal(request, batch=batch, worker=worker)
            if refusal is not None:  # the session stays as it was
                return _message(request, refusal, status=429)
        session_bind(request, batch, participant, worker)
        return redirect("panel-entry", batch_id=batch.pk)
    bound = session_bound(request, batch)
    if bound is None:
        return _message(request, NO_ID, status=400)
    if batch.status == BatchStatus.DRAFT:
        return _message(request, NOT_OPEN, status=409)
    participant, worker = bound
    consent = run_consent(batch.run)
    error = None
    if request.method == "POST":
        try:
            version = consent_check(batch=batch, version=request.POST.get("version", ""))
        except ServiceError as exc:
            error = str(exc)
        else:  # kept in the session: rows are written when work starts (`panel_next`)
            session_bind(request, batch, participant, worker, consent=[version, now().isoformat()])
            return redirect("panel-entry", batch_id=batch.pk)
    if not consent_accepted(request, batch, worker):
        return render(
            request,
            "annotation/panel_consent.html",
            {
                "consent": consent,
                "error": error,
                "batch": batch,
                "task": task_type_for(batch.stage),
            },
            status=400 if error else 200,
        )
    done = submitted_count(batch=batch, worker=worker) if worker else 0
    return render(request, "annotation/panel_start.html", {"batch": batch, "done": done})


def _participant(request: HttpRequest, batch: Batch) -> tuple[str, Worker | None] | HttpResponse:
    """The session's consented participant of `batch` (their worker once they started), or
    the page telling them why not."""
    bound = session_bound(request, batch)
    if bound is None:
        return _message(request, NO_ID, status=403)
    participant, worker = bound
    if not consent_accepted(request, batch, worker):
        return redirect("panel-entry", batch_id=batch.pk)  # the consent page
    return participant, worker


def _start(request: HttpRequest, batch: Batch, participant: str, worker: Worker | None) -> Worker:
    """The participant's worker, their consent given in this session recorded first (their
    rows are written as work starts, never on a click of the consent page)."""
    if worker is not None and consented(run=batch.run, worker=worker):
        return worker
    given = session_consent(request, batch)
    if given is None:  # `_participant` checked it; the text changed since
        raise ServiceError("the information text changed; please read it again")
    worker = participant_start(
        batch=batch, participant=participant, version=given[0], consented_at=given[1]
    )
    session_bind(request, batch, participant, worker)
    request.session[SESSION] = {**request.session[SESSION], "consent": None}  # recorded now
    return worker


def _finish(
    request: HttpRequest,
    batch: Batch,
    participant: str,
    worker: Worker | None,
    outcome: str,
    *,
    stopped: bool = False,
) -> HttpResponse:
    """The end of the participant's work: the outcome's code, or, for "completed" only, the
    panel's completion URL with it; no code, no redirect. A participant who never started
    leaves no row."""
    if worker is not None:
        participant_finish(batch=batch, worker=worker, outcome=outcome, stopped=stopped)
    settings = options.settings_of(batch)
    code = settings["completion"].get(outcome, "")
    # Loading the completion URL is itself the proof of work at the panel, whatever code it
    # carries: SONA grants credit when its completion URL loads (sona-systems.com/researcher/
    # external-study-credit-granting/), and Connect's completion redirect "should only be
    # used at the end of the survey after participants have completed all questions/tasks"
    # (connect-researcher-help.cloudresearch.com, "Project Completion"). Other outcomes show
    # their code on the page.
    if code and settings["completion_url"] and outcome == options.COMPLETED:
        return redirect(
            options.completion_link(settings["completion_url"], code=code, participant=participant)
        )
    context = {"batch": batch, "outcome": outcome, "code": code}
    return render(request, "annotation/panel_done.html", context)


@require_http_methods(["GET"])
def panel_next(request: HttpRequest, batch_id: int) -> HttpResponse:
    """The participant's next task by the claim rule of every worker, or the end."""
    batch = _batch(batch_id)
    found = _participant(request, batch)
    if isinstance(found, HttpResponse):
        return found
    participant, worker = found
    if batch.status == BatchStatus.DRAFT:
        return _message(request, NOT_OPEN, status=409)
    try:
        worker = _start(request, batch, participant, worker)
    except ServiceError:  # the text changed since they accepted it: the consent page
        return redirect("panel-entry", batch_id=batch.pk)
    try:
        # `_participant` found their consent current: the claim is made under that text.
        consent = run_consent(batch.run)["version"]
        assignment = assignment_claim_next(batch=batch, worker=worker, consent_version=consent)
    except ServiceError:  # another stage's pool, blocked: screened out (unless they worked)
        done = submitted_count(batch=batch, worker=worker)
        return _finish(
            request, batch, participant, worker, options.COMPLETED if done else options.SCREENED_OUT
        )
    if assignment is None:
        done = submitted_count(batch=batch, worker=worker)
        if not done and batch.status == BatchStatus.PAUSED:  # no "no work" code: it may resume
            return _message(request, PAUSED, status=409)
        wait = claim_wait_seconds(batch=batch, worker=worker)
        if wait is not None:  # a task may come free from an idle hold: not "no work" yet
            minutes = max(1, -(-wait // 60))
            next_url = reverse("panel-next", args=[batch.pk])
            return _message(request, HELD.format(minutes=minutes), status=409, next_url=next_url)
        return _finish(
            request, batch, participant, worker, options.COMPLETED if done else options.NO_WORK
        )
    return redirect("panel-task", assignment_id=assignment.pk)


@require_http_methods(["GET", "POST"])
def panel_finish(request: HttpRequest, batch_id: int) -> HttpResponse:
    """Stop here: a page that asks, and its button, which lets the open task go and shows
    the end (completed after at least one submitted task; otherwise no code)."""
    batch = _batch(batch_id)
    found = _participant(request, batch)
    if isinstance(found, HttpResponse):
        return found
    participant, worker = found
    done = submitted_count(batch=batch, worker=worker) if worker else 0
    if request.method == "GET":
        return render(request, "annotation/panel_finish.html", {"batch": batch, "done": done})
    outcome = options.COMPLETED if done else options.RETURNED
    return _finish(request, batch, participant, worker, outcome, stopped=True)


@require_http_methods(["GET", "POST"])
def panel_task(request: HttpRequest, assignment_id: int) -> HttpResponse:
    worker_id = session_worker(request)
    if worker_id is None:  # nobody's session: the participant comes back by the study link
        return _message(request, SESSION_ENDED, status=404)
    page = panel_task_page(assignment_id=assignment_id, worker_id=worker_id)
    if page is None:  # not theirs, not a panel batch, or no current consent
        raise Http404("no such assignment for this participant")
    error = None
    if request.method == "POST" and page.state == AssignmentState.ABANDONED:
        next_url = reverse("panel-next", args=[page.batch_id])
        return _message(request, TAKEN_OVER, status=409, next_url=next_url)
    if request.method == "POST":
        try:
            error = task_form_submit(
                data=request.POST,
                assignment_id=page.assignment_id,
                worker_id=page.worker_id,
                stage=page.stage,
            )
        except TooLate as exc:  # the form cannot be sent again: offer a new task instead
            next_url = reverse("panel-next", args=[page.batch_id])
            return _message(request, str(exc), status=409, next_url=next_url)
        if error is None:
            messages.success(request, "Thank you, your answers were saved.")
            return redirect("panel-next", batch_id=page.batch_id)
    elif page.state != AssignmentState.ACCEPTED:
        return redirect("panel-next", batch_id=page.batch_id)
    return task_render(
        request,
        hit_id=page.hit_id,
        key=page_key(assignment_id=page.assignment_id),
        instructions=page.instructions,
        context={
            "error": error,
            "finish_url": reverse("panel-finish", args=[page.batch_id]),
            "task_draft": page.draft or {},  # the answers in progress come back
        },
        status=400 if error else 200,
    )


@require_POST
def panel_task_draft(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """The task page's answers in progress, saved as they are given (`pages/work/drafts.py`)."""
    worker_id = session_worker(request)
    if worker_id is None:
        return draft_session_ended()
    page = panel_task_page(assignment_id=assignment_id, worker_id=worker_id)
    if page is None:  # not theirs, not a panel batch, or no current consent
        raise Http404("no such assignment for this participant")
    return draft_post(request, assignment_id=page.assignment_id, worker_id=page.worker_id)
