"""The worker page inside MTurk's frame (ExternalQuestion).

MTurk frames the page cross-site, so session and CSRF cookies are not available: the form
carries a signed token naming the local assignment instead. Answers are stored here first,
then posted to MTurk's externalSubmit.
"""

from __future__ import annotations

import contextlib

from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from annotation.crowd.mturk import PREVIEW_ASSIGNMENT, SUBMIT_HOSTS
from annotation.errors import AnswerError, ServiceError
from annotation.models import Assignment, AssignmentState, Hit
from annotation.selectors.work import hit_view
from annotation.services.assignments import assignment_submit, stored_answers
from annotation.services.mturk import (
    mturk_assignment_open,
    mturk_pool_grant_pending,
    mturk_provider,
)
from annotation.views import answers_from

SALT = "crowdvl.mturk.task"


def _submit_page(request: HttpRequest, assignment: Assignment, turk_submit_to: str) -> HttpResponse:
    answers = stored_answers(assignment)
    return render(
        request,
        "annotation/mturk_submit.html",
        {
            "submit_url": turk_submit_to.rstrip("/") + "/mturk/externalSubmit",
            "assignment_id": assignment.provider_assignment_id,
            "answers": answers,
        },
    )


@xframe_options_exempt
@csrf_exempt
@require_http_methods(["GET", "POST"])
def mturk_task(request: HttpRequest, hit_id: int) -> HttpResponse:
    hit = get_object_or_404(
        Hit.objects.select_related("batch__run"), pk=hit_id, batch__provider="mturk"
    )
    params = request.GET if request.method == "GET" else request.POST
    assignment_id = params.get("assignmentId", "")
    turk_submit_to = params.get("turkSubmitTo", "")
    view = hit_view(hit=hit)
    context = {**view, "batch": hit.batch, "external": True}
    if request.method == "GET" and assignment_id in ("", PREVIEW_ASSIGNMENT):
        return render(request, view["template"], {**context, "preview": True})
    if turk_submit_to.rstrip("/") not in SUBMIT_HOSTS:
        return HttpResponseBadRequest("turkSubmitTo must be MTurk's own submit address")

    if request.method == "GET":
        worker_id = params.get("workerId", "")
        if params.get("hitId") and params["hitId"] != hit.provider_hit_id:
            return HttpResponseBadRequest("hitId does not match this HIT")
        try:
            assignment = mturk_assignment_open(
                hit=hit, worker_id=worker_id, assignment_id=assignment_id
            )
        except ServiceError as exc:
            return render(request, "annotation/work_done.html", {"reason": str(exc)}, status=403)
        if assignment.state != AssignmentState.ACCEPTED:
            return _submit_page(request, assignment, turk_submit_to)  # answers are already here
        token = signing.dumps({"a": assignment.pk, "m": assignment_id}, salt=SALT)
        hidden = {"assignmentId": assignment_id, "turkSubmitTo": turk_submit_to, "token": token}
        return render(request, view["template"], {**context, "hidden_fields": hidden})

    try:
        signed = signing.loads(params.get("token", ""), salt=SALT, max_age=7 * 24 * 3600)
    except signing.BadSignature:
        return HttpResponseBadRequest("this task form is not valid any more; reload the HIT")
    assignment = get_object_or_404(
        Assignment.objects.select_related("worker", "hit__batch"), pk=signed["a"], hit=hit
    )
    if signed["m"] != assignment_id or assignment.provider_assignment_id != assignment_id:
        return HttpResponseBadRequest("assignmentId does not match this task form")
    try:
        assignment_submit(
            assignment_id=assignment.pk,
            worker=assignment.worker,
            answers=answers_from(params, hit.batch.stage),
        )
    except (AnswerError, ServiceError) as exc:
        hidden = {
            "assignmentId": assignment_id,
            "turkSubmitTo": turk_submit_to,
            "token": params["token"],
        }
        return render(
            request,
            view["template"],
            {**context, "hidden_fields": hidden, "error": str(exc)},
            status=400,
        )
    # If MTurk is unreachable now, the periodic sync grants it later; the answers are safe.
    with contextlib.suppress(ServiceError):
        mturk_pool_grant_pending(batch=hit.batch, provider=mturk_provider())
    assignment.refresh_from_db()
    return _submit_page(request, assignment, turk_submit_to)
