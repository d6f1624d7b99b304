"""Worker pages for the local provider: parse the request, call a service, render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotation.errors import AnswerError, PoolConflict, ServiceError
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchImage,
    Image,
    ImageSource,
    Worker,
)
from annotation.selectors.work import hit_view
from annotation.services.assignments import (
    assignment_claim_next,
    assignment_submit,
    worker_get_or_create,
)
from annotation.services.images import ImageUnavailable, cache_path, image_cached
from annotation.tasktypes import task_type_for

SESSION_WORKER = "crowdvl_worker"
PROVIDER = "local"


def answers_from(data: Any, stage: str) -> dict[str, str]:
    """The answers (q0, q1, …) of a submitted task form, as the stage's task type reads them."""
    task = task_type_for(stage)
    return {k: task.form_value(data=data, key=k) for k in data if k[:1] == "q" and k[1:].isdigit()}


def _session_worker(request: HttpRequest) -> Worker | None:
    pk = request.session.get(SESSION_WORKER)
    return Worker.objects.filter(pk=pk).first() if pk else None


@require_http_methods(["GET", "POST"])
def work_start(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch, pk=batch_id, provider=PROVIDER)
    if request.method == "POST":
        try:
            worker = worker_get_or_create(
                provider=PROVIDER, external_id=request.POST.get("worker_id", "")
            )
        except ServiceError as exc:
            return render(
                request,
                "annotation/work_start.html",
                {"batch": batch, "error": str(exc)},
                status=400,
            )
        request.session[SESSION_WORKER] = worker.pk
        return redirect("work-next", batch_id=batch.pk)
    return render(
        request, "annotation/work_start.html", {"batch": batch, "worker": _session_worker(request)}
    )


def work_next(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch, pk=batch_id, provider=PROVIDER)
    worker = _session_worker(request)
    if worker is None:
        return redirect("work-start", batch_id=batch.pk)
    try:
        assignment = assignment_claim_next(batch=batch, worker=worker)
    except (PoolConflict, ServiceError) as exc:
        return render(
            request, "annotation/work_done.html", {"batch": batch, "reason": str(exc)}, status=403
        )
    if assignment is None:
        return render(request, "annotation/work_done.html", {"batch": batch})
    return redirect("work-assignment", assignment_id=assignment.pk)


@require_http_methods(["GET", "POST"])
def work_assignment(request: HttpRequest, assignment_id: int) -> HttpResponse:
    worker = _session_worker(request)
    assignment = get_object_or_404(
        Assignment.objects.select_related("hit__batch"), pk=assignment_id
    )
    if worker is None or assignment.worker_id != worker.pk:
        raise Http404("no such assignment for this worker")
    batch = assignment.hit.batch
    error = None
    if request.method == "POST":
        answers = answers_from(request.POST, batch.stage)
        try:
            assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
        except (AnswerError, ServiceError) as exc:
            error = str(exc)
        else:
            messages.success(request, "Thank you, your answers were saved.")
            return redirect("work-next", batch_id=batch.pk)
    elif assignment.state != AssignmentState.ACCEPTED:
        return redirect("work-next", batch_id=batch.pk)
    view = hit_view(hit=assignment.hit)
    return render(
        request,
        view["template"],
        {**view, "assignment": assignment, "batch": batch, "error": error},
        status=400 if error else 200,
    )


def _image_response(image: Image) -> HttpResponse:
    """The re-encoded JPEG: only ever an image type, no file name, nothing to sniff."""
    try:
        if image.dataset.image_source == ImageSource.LOCAL_DIR:
            data = image_cached(image=image)  # a local read: fine inside a request
        else:
            path = cache_path(image)  # remote sources are fetched by the caching job only
            if not path.exists():
                raise Http404("image not cached yet")
            data = path.read_bytes()
    except ImageUnavailable:
        raise Http404("image unavailable") from None
    response = HttpResponse(data, content_type="image/jpeg")
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=86400"
    response["Content-Security-Policy"] = "default-src 'none'"
    return response


def batch_image(request: HttpRequest, token: str) -> HttpResponse:
    """An image of a batch's pages, by the batch's random token for it."""
    row = get_object_or_404(BatchImage.objects.select_related("image__dataset"), token=token)
    return _image_response(row.image)


@staff_member_required
def staff_image(request: HttpRequest, image_id: int) -> HttpResponse:
    """Any image by its id, for staff pages (the review queue) only."""
    return _image_response(get_object_or_404(Image.objects.select_related("dataset"), pk=image_id))
