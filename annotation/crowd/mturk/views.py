"""MTurk's pages: the worker page inside MTurk's frame (ExternalQuestion), and the staff's
read-only money check against MTurk's own lists.

MTurk frames the page cross-site, so session and CSRF cookies are not available: the form
carries a signed token binding the HIT, the MTurk assignment and the worker instead. Nothing
from the URL is proof: opening the page writes nothing, and answers posted here are stored as
unconfirmed work that counts only once synchronisation finds the assignment at MTurk.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.decorators import login_required
from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from annotation.crowd.mturk.arrival import (
    TooManyUnconfirmed,
    mturk_answers_receive,
    mturk_task_open,
)
from annotation.crowd.mturk.client import PREVIEW_ASSIGNMENT, SUBMIT_HOSTS
from annotation.crowd.mturk.reconcile import mturk_reconcile
from annotation.errors import AnswerError, ServiceError
from annotation.models import Hit
from annotation.pages.work.forms import answers_from
from annotation.pages.work.render import task_render
from annotation.permissions import Action, require
from annotation.ratelimit import client_address, rate_allow
from annotation.selectors.work.images import page_key
from annotation.selectors.work.run_texts import run_instructions
from annotation.selectors.work.task_page import hit_view
from annotation.services.work.submit import stored_answers
from annotation.tasktypes import task_type_for
from pipeline.errors import InputError

SALT = "crowdvl.mturk.task"
PROVIDER = "mturk"


def _submit_page(
    request: HttpRequest, assignment_id: str, answers: Mapping[str, str], turk_submit_to: str
) -> HttpResponse:
    return render(
        request,
        "annotation/mturk_submit.html",
        {
            "submit_url": turk_submit_to.rstrip("/") + "/mturk/externalSubmit",
            "assignment_id": assignment_id,
            "answers": dict(answers),
        },
    )


def _refused(request: HttpRequest, reason: str) -> HttpResponse:
    return render(request, "annotation/work_done.html", {"reason": reason}, status=403)


@xframe_options_exempt
@csrf_exempt
@require_http_methods(["GET", "POST"])
def mturk_task(request: HttpRequest, hit_id: int) -> HttpResponse:
    hit = get_object_or_404(
        Hit.objects.select_related("batch__run"), pk=hit_id, batch__provider=PROVIDER
    )
    batch = hit.batch
    params = request.GET if request.method == "GET" else request.POST
    assignment_id = params.get("assignmentId", "")
    turk_submit_to = params.get("turkSubmitTo", "")
    if request.method == "GET" and assignment_id in ("", PREVIEW_ASSIGNMENT):
        # Anyone may preview: the instructions and a fixed example, never the HIT's items.
        preview = {"batch": batch, "task": task_type_for(batch.stage)}
        return render(request, "annotation/mturk_preview.html", preview)
    instructions = run_instructions(batch.run.config, batch.stage)
    context = {"batch": batch, "external": True}
    key = page_key(hit_id=hit.pk, external=assignment_id)
    if turk_submit_to.rstrip("/") not in SUBMIT_HOSTS:
        return HttpResponseBadRequest("turkSubmitTo must be MTurk's own submit address")
    if not assignment_id or len(assignment_id) > 100:
        return HttpResponseBadRequest("assignmentId is missing or too long")

    if request.method == "GET":
        worker_id = params.get("workerId", "")
        try:
            done = mturk_task_open(
                hit=hit,
                hit_id=params.get("hitId", ""),
                worker_id=worker_id,
                assignment_id=assignment_id,
            )
        except ServiceError as exc:
            return _refused(request, str(exc))
        if done is not None:  # answers are already here: offer MTurk's submit form again
            return _submit_page(request, assignment_id, stored_answers(done), turk_submit_to)
        token = signing.dumps({"h": hit.pk, "a": assignment_id, "w": worker_id}, salt=SALT)
        hidden = {"assignmentId": assignment_id, "turkSubmitTo": turk_submit_to, "token": token}
        return task_render(
            request,
            hit_id=hit.pk,
            key=key,
            instructions=instructions,
            context={**context, "hidden_fields": hidden},
        )

    try:
        max_age = batch.assignment_duration_seconds + 3600
        signed = signing.loads(params.get("token", ""), salt=SALT, max_age=max_age)
    except signing.BadSignature:
        return HttpResponseBadRequest("this task form is not valid any more; reload the HIT")
    if signed.get("h") != hit.pk or signed.get("a") != assignment_id:
        return HttpResponseBadRequest("assignmentId does not match this task form")
    answers = answers_from(params, batch.stage)
    keys = {q["key"] for q in hit_view(hit_id=hit.pk)["questions"]}
    if not rate_allow("mturk-post", client_address(request)):
        # Store nothing more from this address for now; the answers still go to MTurk, and
        # synchronisation brings them in from there.
        return _submit_page(
            request, assignment_id, {k: v for k, v in answers.items() if k in keys}, turk_submit_to
        )
    try:
        assignment = mturk_answers_receive(
            hit=hit, worker_id=signed["w"], assignment_id=assignment_id, answers=answers
        )
    except TooManyUnconfirmed:
        return _submit_page(
            request, assignment_id, {k: v for k, v in answers.items() if k in keys}, turk_submit_to
        )
    except (AnswerError, ServiceError) as exc:
        hidden = {
            "assignmentId": assignment_id,
            "turkSubmitTo": turk_submit_to,
            "token": params["token"],
        }
        return task_render(
            request,
            hit_id=hit.pk,
            key=key,
            instructions=instructions,
            context={**context, "hidden_fields": hidden, "error": str(exc)},
            status=400,
        )
    return _submit_page(request, assignment_id, stored_answers(assignment), turk_submit_to)


@login_required
@require_http_methods(["GET", "POST"])
def mturk_reconcile_page(request: HttpRequest) -> HttpResponse:
    """Asks MTurk only when staff press the button (it lists every HIT and assignment of the
    account, across projects: staff only)."""
    require(request.user, Action.ADMIN)
    report, error = None, None
    if request.method == "POST":
        try:
            report = mturk_reconcile(environment=request.POST.get("environment") or None)
        except (ServiceError, InputError) as exc:
            error = str(exc)
    context = {"report": report, "error": error}
    return render(request, "annotation/mturk_reconcile.html", context, status=400 if error else 200)
