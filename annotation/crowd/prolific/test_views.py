"""The test study's pages (`test_study.py`): the researcher's page that makes the test study
(and test participants), and the task a test participant reaches after the real link, consent
and Prolific's session check: the batch's first task as its workers will see it, read but never
stored, leaving through the study's real completion code. Test participants are the lab's own
accounts, so the task page asks them to be signed in to the console (the task's images are
served to the run's researchers)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation.crowd.prolific.provider import prolific_provider
from annotation.crowd.prolific.studies import COMPLETED, completion_url
from annotation.crowd.prolific.test_study import (
    prolific_test_participant_create,
    prolific_test_study,
    prolific_test_study_of,
)
from annotation.errors import ServiceError, page_message
from annotation.models import Batch, BatchStatus
from annotation.pages.batches.preview import preview_refusal, preview_response
from annotation.permissions import Action, require
from annotation.selectors.work.preview import batch_preview
from pipeline.errors import InputError

SESSION = "crowdvl_prolific"  # the arrival's session (views.SESSION)


@login_required
@require_http_methods(["GET", "POST"])
def prolific_test_page(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id, provider="prolific")
    require(request.user, Action.VIEW, run=batch.run)
    error, participant = None, None
    if request.method == "POST":
        require(request.user, Action.ACT, run=batch.run)
        try:
            client = prolific_provider().client
            if request.POST.get("email"):
                participant = prolific_test_participant_create(
                    email=request.POST["email"].strip(), client=client
                )
            else:
                prolific_test_study(batch=batch, client=client)
        except (ServiceError, InputError) as exc:
            error = page_message(exc)
    context = {
        "batch": batch,
        "draft": batch.status == BatchStatus.DRAFT,
        "test": prolific_test_study_of(batch),
        "participant": participant,
        "error": error,
    }
    return render(request, "annotation/prolific_test.html", context, status=400 if error else 200)


@login_required
@require_http_methods(["GET", "POST"])
def prolific_test_task(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id, provider="prolific")
    held = request.session.get(SESSION)
    test = prolific_test_study_of(batch)
    if (
        not isinstance(held, dict)
        or held.get("batch") != batch.pk
        or test is None
        or held.get("test") != test.study_id
    ):
        raise Http404("open the test study from Prolific first")
    require(request.user, Action.VIEW, run=batch.run)
    page = batch_preview(batch=batch, number=1)
    if page is None:
        raise Http404("the batch has no task")
    error = preview_refusal(request, batch=batch, page=page) if request.method == "POST" else None
    if request.method == "POST" and error is None:  # nothing stored: back to Prolific
        return HttpResponseRedirect(completion_url(batch, COMPLETED))
    preview = {
        "label": f"Prolific test study of batch {batch.pk}: nothing you answer is stored",
        "number": 1,
        "total": 1,
        "previous": None,
        "next": None,
        "back": reverse("prolific-test", args=[batch.pk]),
    }
    return preview_response(request, page=page, preview=preview, error=error)
