"""A participant's pages for Prolific: arrival (the study's instructions and the consent only;
the URL's ids are claims, checked at Prolific when the participant consents), the task, and
the completion redirect to Prolific with the code of the outcome; and Prolific's webhook.

The session remembers (batch, participant, Prolific session); no page shows or logs the
participant's id beyond this session, and no export carries it (pseudonyms, as for all workers).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from annotation.crowd.prolific.arrival import (
    arrival_ids_check,
    participant_claim,
    participant_verify,
    session_verify,
)
from annotation.crowd.prolific.hook_setup import prolific_hooks_setup
from annotation.crowd.prolific.hooks import (
    BODY_MAX,
    HookRefused,
    hook_apply,
    hook_sent_at,
    hook_verify,
)
from annotation.crowd.prolific.provider import prolific_provider
from annotation.crowd.prolific.reconcile import prolific_reconcile
from annotation.crowd.prolific.studies import COMPLETED, NO_CONSENT, NO_WORK, completion_url
from annotation.crowd.prolific.test_study import prolific_test_study_of
from annotation.errors import PoolConflict, ServiceError, TooLate, page_message
from annotation.models import Assignment, AssignmentState, Batch, BatchStatus
from annotation.pages.work.drafts import draft_post, draft_session_ended
from annotation.pages.work.forms import task_form_submit
from annotation.pages.work.render import task_render
from annotation.permissions import Action, require
from annotation.selectors.work.drafts import assignment_draft
from annotation.selectors.work.images import page_key
from annotation.selectors.work.invitations import run_consent
from annotation.selectors.work.run_texts import run_instructions
from annotation.services.work.consent import consent_record
from annotation.tasktypes import task_type_for
from pipeline.errors import InputError

SESSION = "crowdvl_prolific"
PROVIDER = "prolific"


def _refused(request: HttpRequest, reason: str, status: int = 403) -> HttpResponse:
    return render(request, "annotation/work_done.html", {"reason": reason}, status=status)


def _client() -> Any:
    return prolific_provider().client


def _held(request: HttpRequest, batch: Batch) -> dict[str, Any] | None:
    held = request.session.get(SESSION)
    return held if isinstance(held, dict) and held.get("batch") == batch.pk else None


@require_http_methods(["GET", "POST"])
def prolific_start(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id, provider=PROVIDER)
    # A draft takes only its test study's test participants (`test_study.py`), who see a
    # preview; paused: only those already inside.
    test = prolific_test_study_of(batch) if batch.status == BatchStatus.DRAFT else None
    if test is None and batch.status not in (BatchStatus.PUBLISHED, BatchStatus.PAUSED):
        return _refused(request, "This study is not taking participants any more.")
    consent = run_consent(batch.run)
    if request.method == "GET":
        ids = {k: request.GET.get(k, "") for k in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")}
        try:
            arrival_ids_check(
                batch=batch,
                pid=ids["PROLIFIC_PID"],
                study_id=ids["STUDY_ID"],
                session_id=ids["SESSION_ID"],
                expected=test.study_id if test else "",
            )
        except ServiceError as exc:
            return _refused(request, str(exc), status=400)
        held = _held(request, batch)
        if held is None or held.get("session") != ids["SESSION_ID"]:
            request.session.cycle_key()  # a new session for a new person or Prolific session
            request.session[SESSION] = {
                "batch": batch.pk,
                "pid": ids["PROLIFIC_PID"],
                "session": ids["SESSION_ID"],
            }
        return _consent_page(request, batch, consent)
    held = _held(request, batch)
    if held is None:
        return _refused(request, "Open this study from Prolific.", status=400)
    if request.POST.get("decline"):
        return HttpResponseRedirect(completion_url(batch, NO_CONSENT))
    if request.POST.get("version") != consent["version"]:
        return _consent_page(
            request, batch, consent, error="The consent text changed: read it again."
        )
    if test is not None:  # a test participant: checked at Prolific, nothing written here
        try:
            session_verify(
                pid=held["pid"],
                session_id=held["session"],
                study_id=test.study_id,
                client=_client(),
            )
        except ServiceError as exc:
            return _refused(request, str(exc))
        request.session[SESSION] = {**held, "test": test.study_id}
        return HttpResponseRedirect(reverse("prolific-test-task", args=[batch.pk]))
    try:
        worker = participant_verify(
            batch=batch, pid=held["pid"], session_id=held["session"], client=_client()
        )
    except ServiceError as exc:
        return _refused(request, str(exc))
    # Recorded once Prolific confirmed who they are, before any claim: consent stands even
    # when no task is left for them.
    consent_record(worker=worker, run=batch.run, version=consent["version"])
    try:
        assignment = participant_claim(
            batch=batch,
            worker=worker,
            session_id=held["session"],
            consent_version=consent["version"],
        )
    except (PoolConflict, ServiceError):
        # A real participant this study cannot take (another stage's pool, blocked): back to
        # Prolific with the code that asks them to return it, not a dead end.
        return HttpResponseRedirect(completion_url(batch, NO_WORK))
    request.session[SESSION] = {**held, "worker": worker.pk, "consent": consent["version"]}
    if assignment is None:
        return HttpResponseRedirect(completion_url(batch, NO_WORK))
    return HttpResponseRedirect(f"/prolific/assignment/{assignment.pk}/")


def _consent_page(
    request: HttpRequest, batch: Batch, consent: dict[str, Any], error: str | None = None
) -> HttpResponse:
    context = {
        "batch": batch,
        "task": task_type_for(batch.stage),
        "consent": consent,
        "error": error,
    }
    return render(request, "annotation/prolific_start.html", context, status=400 if error else 200)


# A task page reached from a session that holds no participant (it expired, or another
# browser): they come back through the study's link, which finds the task they hold.
SESSION_ENDED = (
    "Your session has ended, so this page could not be sent. Please open the study again from "
    "Prolific: your task is still yours, and the answers you gave come back on it."
)


def _task_held(request: HttpRequest, assignment_id: int) -> Assignment | HttpResponse:
    """The session's own task `assignment_id`, or the page saying why not."""
    assignment = get_object_or_404(
        Assignment.objects.select_related("hit__batch__run", "worker"),
        pk=assignment_id,
        worker__provider=PROVIDER,
    )
    if request.session.get(SESSION) is None:
        return _refused(request, SESSION_ENDED, status=404)
    held = _held(request, assignment.hit.batch)
    if (
        held is None
        or held.get("worker") != assignment.worker_id
        or held.get("session") != assignment.provider_assignment_id
    ):
        return _refused(request, "This task belongs to another Prolific session.", status=404)
    return assignment


@require_http_methods(["GET", "POST"])
def prolific_task(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = _task_held(request, assignment_id)
    if isinstance(assignment, HttpResponse):
        return assignment
    batch = assignment.hit.batch
    if assignment.state == AssignmentState.ABANDONED:
        return _refused(
            request,
            "Your Prolific session ended (returned or timed out): this task was freed.",
            409,
        )
    if assignment.state != AssignmentState.ACCEPTED:
        return HttpResponseRedirect(completion_url(batch, COMPLETED))
    error = None
    if request.method == "POST":
        try:
            error = task_form_submit(
                data=request.POST,
                assignment_id=assignment.pk,
                worker_id=assignment.worker_id,
                stage=batch.stage,
            )
        except TooLate as exc:
            return _refused(request, str(exc), status=409)
        if error is None:
            return HttpResponseRedirect(completion_url(batch, COMPLETED))
    return task_render(
        request,
        hit_id=assignment.hit_id,
        key=page_key(assignment_id=assignment.pk),
        instructions=run_instructions(batch.run.config, batch.stage),
        # The answers in progress come back on the page.
        context={"error": error, "task_draft": assignment_draft(assignment_id=assignment.pk) or {}},
        status=400 if error else 200,
    )


@require_POST
def prolific_task_draft(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """The task page's answers in progress, saved as they are given (`pages/work/drafts.py`)."""
    if request.session.get(SESSION) is None:
        return draft_session_ended()
    assignment = _task_held(request, assignment_id)
    if isinstance(assignment, HttpResponse):
        return JsonResponse({"error": "no such task for this session"}, status=404)
    return draft_post(request, assignment_id=assignment.pk, worker_id=assignment.worker_id)


@login_required
@require_http_methods(["GET", "POST"])
def prolific_reconcile_page(request: HttpRequest) -> HttpResponse:
    """Asks Prolific only when staff press a button: reconcile (every study of the
    installation), or set up the webhooks (`hook_setup`)."""
    require(request.user, Action.ADMIN)
    report, hooks, error = None, None, None
    if request.method == "POST":
        try:
            if request.POST.get("action") == "hooks":
                hooks = prolific_hooks_setup(
                    client=_client(),
                    new_secret=bool(request.POST.get("new_secret")),
                    resubscribe=bool(request.POST.get("resubscribe")),
                )
            else:
                report = prolific_reconcile(client=_client())
        except (ServiceError, InputError) as exc:
            error = page_message(exc)
    context = {"report": report, "hooks": hooks, "error": error}
    status = 400 if error else 200
    response = render(request, "annotation/prolific_reconcile.html", context, status=status)
    if hooks is not None and hooks.secret:
        patch_cache_control(response, no_store=True)  # the new secret is shown this once
    return response


def _hook_body(request: HttpRequest) -> bytes | None:
    """The delivery's body, None when it is over BODY_MAX: the declared Content-Length is
    checked before anything is read, then at most BODY_MAX + 1 bytes are read (Django's own
    cap, DATA_UPLOAD_MAX_MEMORY_SIZE, is larger and answers an HTML page)."""
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if not declared.isdigit() or int(declared) > BODY_MAX:
        return None
    body = request.read(BODY_MAX + 1)
    return body if len(body) <= BODY_MAX else None


@csrf_exempt
@require_POST
def prolific_hook(request: HttpRequest) -> HttpResponse:
    """Prolific's deliveries (signed; each event applied once, an out-of-order status never
    applied over a newer one)."""
    body = _hook_body(request)
    if body is None:
        return JsonResponse(
            {"error": f"request body over {BODY_MAX} bytes", "limit": BODY_MAX}, status=413
        )
    try:
        hook_verify(
            body=body,
            signature=request.headers.get("X-Prolific-Request-Signature", ""),
            stamp=request.headers.get("X-Prolific-Request-Timestamp", ""),
        )
        payload = json.loads(body)
        if not isinstance(payload, dict):
            raise HookRefused("the body is not an event")
        stamp = request.headers.get("X-Timestamp") or request.headers.get(
            "X-Prolific-Request-Timestamp", ""
        )
        changed = hook_apply(
            event_id=request.headers.get("X-Event-ID", ""),
            payload=payload,
            sent_at=hook_sent_at(stamp),
        )
    except (HookRefused, ValueError) as exc:
        return JsonResponse({"error": str(exc)}, status=403)
    return JsonResponse({"changed": changed})
