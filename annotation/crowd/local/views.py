"""Worker pages for the local provider: parse the request, call a service, render."""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.crowd.local.invitations import invitation_consent
from annotation.crowd.local.progress import worker_batches, worker_open_tasks
from annotation.errors import PoolConflict, ServiceError, TooLate
from annotation.models import AssignmentState, Batch, BatchStatus, Run, Worker
from annotation.pages.work.drafts import draft_post, draft_session_ended
from annotation.pages.work.forms import task_form_submit
from annotation.pages.work.render import task_render
from annotation.pages.work.shell import shell_fill_plain, task_shell
from annotation.selectors.work.images import page_key
from annotation.selectors.work.invitations import invitation_by_token, invited_worker, run_consent
from annotation.selectors.work.task_page import task_page
from annotation.services.work.claim import assignment_claim_next

SESSION_WORKER = "crowdvl_worker"
SESSION_HOME = "crowdvl_join"  # the invitation token of the session, for "your tasks" links
PROVIDER = "local"  # this package's provider
_UTF8 = re.compile(r"utf-?8", re.IGNORECASE)


def _invited_worker(request: HttpRequest, run: Run) -> Worker | None:
    """The worker whose invitation link opened this session, if it is still valid for `run`
    and its consent is current. A typed id, a staff login or a revoked link is no one."""
    pk = request.session.get(SESSION_WORKER)
    if not isinstance(pk, int):
        return None
    return invited_worker(run=run, worker_id=pk, provider=PROVIDER)


# A task page reached from a session that holds no worker (it expired, or another browser):
# answers given so far were saved as they were given (issue 46) and come back on the task.
SESSION_ENDED = (
    "Your session has ended, so this page could not be sent. Open the invitation link the "
    "researchers sent you again: your task is still yours, and the answers you gave come back "
    "on it."
)


def _session_ended(request: HttpRequest) -> HttpResponse:
    # Not found, as any task that is not the session's: the page only says how to get back.
    return render(request, "annotation/work_done.html", {"reason": SESSION_ENDED}, status=404)


def _not_invited(request: HttpRequest, run: Run | None = None) -> HttpResponse:
    """No worker for `run` in this session. One whose link is still valid but who accepted an
    earlier consent text is asked again, on their link's page (their next task asks again)."""
    token = request.session.get(SESSION_HOME)
    invitation = invitation_by_token(token) if run is not None and isinstance(token, str) else None
    if (
        invitation is not None
        and run is not None
        and invitation.run_id == run.pk
        and invitation.worker_id == request.session.get(SESSION_WORKER)
    ):
        return redirect("work-join", token=invitation.token)
    reason = (
        "This page is for invited workers. Open the invitation link the researchers sent you "
        "(it may have been revoked)."
    )
    return render(request, "annotation/work_done.html", {"reason": reason}, status=403)


@require_http_methods(["GET", "POST"])
def work_join(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation link: the information and consent page first, then the run's batches."""
    invitation = invitation_by_token(token)
    if invitation is None:
        reason = "This invitation link is not valid: it was revoked or never existed."
        return render(request, "annotation/work_done.html", {"reason": reason}, status=404)
    run = invitation.run
    consent = run_consent(run)
    error = None
    if request.method == "POST":
        try:
            invitation_consent(invitation=invitation, version=request.POST.get("version", ""))
        except ServiceError as exc:
            error = str(exc)
    if invitation.consent_version != consent["version"]:
        return render(
            request,
            "annotation/work_consent.html",
            {"consent": consent, "error": error},
            status=400 if error else 200,
        )
    if request.session.get(SESSION_WORKER) != invitation.worker_id:
        request.session.cycle_key()  # a new session for a new person
    request.session[SESSION_WORKER] = invitation.worker_id
    request.session[SESSION_HOME] = token  # "your tasks" links back here
    batches = worker_batches(run=run, worker=invitation.worker)
    # Their tasks in progress first (a paused batch's too, which the list leaves out): the way
    # back to their answers after a closed browser, an ended session or on another device.
    open_tasks = worker_open_tasks(run=run, worker=invitation.worker)
    context = {"run": run, "batches": batches, "open_tasks": open_tasks}
    return render(request, "annotation/work_join.html", context)


@require_http_methods(["GET"])
def work_start(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch, pk=batch_id, provider=PROVIDER)
    worker = _invited_worker(request, batch.run)
    if worker is None:
        return _not_invited(request, batch.run)
    progress = next(
        (p for p in worker_batches(run=batch.run, worker=worker) if p.batch == batch), None
    )
    context = {
        "batch": batch,
        "worker": worker,
        "progress": progress,
        "closed": None if progress else _closed_reason(batch),
    }
    return render(request, "annotation/work_start.html", context)


# Why a batch is not open to an invited worker, in their words (one sentence each, issue 46).
PAUSED = "The researchers paused this batch for now: please come back later."
POOL = (
    "This part of the study needs people who have not taken part in its other part, and you "
    "already have. It is closed to you, through no fault of yours: thank you for your work."
)
CLOSED = "This batch has closed: thank you for your interest."


def _closed_reason(batch: Batch) -> str:
    if batch.status == BatchStatus.PAUSED:
        return PAUSED
    return POOL if batch.status == BatchStatus.PUBLISHED else CLOSED


def work_next(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id, provider=PROVIDER)
    worker = _invited_worker(request, batch.run)
    if worker is None:
        return _not_invited(request, batch.run)
    home = request.session.get(SESSION_HOME)
    try:
        # `_invited_worker` found their consent current: the claim is made under that text.
        consent = run_consent(batch.run)["version"]
        assignment = assignment_claim_next(batch=batch, worker=worker, consent_version=consent)
    except PoolConflict:
        context = {"batch": batch, "reason": POOL, "home": home}
        return render(request, "annotation/work_done.html", context, status=403)
    except ServiceError as exc:
        context = {"batch": batch, "reason": str(exc), "home": home}
        return render(request, "annotation/work_done.html", context, status=403)
    if assignment is None and batch.status == BatchStatus.PAUSED:
        context = {"batch": batch, "reason": PAUSED, "home": home}
        return render(request, "annotation/work_done.html", context, status=409)
    if assignment is None:
        return render(request, "annotation/work_done.html", {"batch": batch, "home": home})
    return redirect("work-assignment", assignment_id=assignment.pk)


@require_http_methods(["GET", "POST"])
def work_assignment(request: HttpRequest, assignment_id: int) -> HttpResponse:
    worker_id = request.session.get(SESSION_WORKER)
    if not isinstance(worker_id, int):  # nobody's session: the worker signs in again
        return _session_ended(request)
    page = task_page(assignment_id=assignment_id, worker_id=worker_id, provider=PROVIDER)
    if page is None:  # not theirs, not a local batch, or no valid invitation
        raise Http404("no such assignment for this worker")
    error = None
    if request.method == "POST":
        try:
            error = task_form_submit(
                data=request.POST,
                assignment_id=page.assignment_id,
                worker_id=page.worker_id,
                stage=page.stage,
            )
        except TooLate as exc:  # the form cannot be sent again: offer a new task instead
            context = {"reason": str(exc), "next": Batch.objects.get(pk=page.batch_id)}
            return render(request, "annotation/work_done.html", context, status=409)
        if error is None:
            messages.success(request, "Thank you, your answers were saved.")
            return redirect("work-next", batch_id=page.batch_id)
    elif page.state != AssignmentState.ACCEPTED:
        return redirect("work-next", batch_id=page.batch_id)
    return task_render(
        request,
        hit_id=page.hit_id,
        key=page_key(assignment_id=page.assignment_id),
        instructions=page.instructions,
        # The answers in progress come back on the page (after a refused submit too).
        context={"error": error, "task_draft": page.draft or {}},
        status=400 if error else 200,
    )


@require_POST
def work_assignment_draft(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """The task page's answers in progress, saved as they are given (`pages/work/drafts.py`)."""
    worker_id = request.session.get(SESSION_WORKER)
    if not isinstance(worker_id, int):
        return draft_session_ended()
    page = task_page(assignment_id=assignment_id, worker_id=worker_id, provider=PROVIDER)
    if page is None:  # not theirs, not a local batch, or no valid invitation
        raise Http404("no such assignment for this worker")
    return draft_post(request, assignment_id=page.assignment_id, worker_id=page.worker_id)


def work_assignment_plain(request: HttpRequest, assignment_id: int) -> HttpResponse | None:
    """`work_assignment`'s answer to a GET of the worker's own open assignment when the page
    shows nothing but the task (no message, no error, nobody signed in: the caller checks the
    last two; no answers in progress to restore), from the same checks; None for anything
    else, which the view answers.
    The lean path's view (`lean_path.py`)."""
    worker_id = request.session.get(SESSION_WORKER)
    if not isinstance(worker_id, int) or not _UTF8.fullmatch(settings.DEFAULT_CHARSET):
        return None  # the plain page is kept in UTF-8
    page = task_page(assignment_id=assignment_id, worker_id=worker_id, provider=PROVIDER)
    if page is None or page.state != AssignmentState.ACCEPTED or page.draft is not None:
        return None  # a draft to restore: the full way puts it on the page
    shell = task_shell(hit_id=page.hit_id, instructions=page.instructions)
    key = page_key(assignment_id=page.assignment_id)
    return HttpResponse(shell_fill_plain(shell, token=get_token(request), key=key))
