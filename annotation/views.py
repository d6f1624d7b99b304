"""Worker pages for the local provider: parse the request, call a service, render."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotation.errors import AnswerError, PoolConflict, ServiceError, TooLate
from annotation.models import (
    AssignmentState,
    Batch,
    BatchStatus,
    Image,
    ImageSource,
    Run,
    Worker,
)
from annotation.permissions import Action, is_staff, require, visible_runs
from annotation.selectors.images import batch_image_id
from annotation.selectors.invitations import invitation_by_token, invited_worker, run_consent
from annotation.selectors.work import hit_view, task_page
from annotation.services.assignments import assignment_claim_next, assignment_submit
from annotation.services.images import (
    ImageUnavailable,
    cache_path,
    cache_path_for,
    image_cached,
)
from annotation.services.invitations import invitation_consent
from annotation.tasktypes import task_type_for

SESSION_WORKER = "crowdvl_worker"
PROVIDER = "local"


def answers_from(data: Any, stage: str) -> dict[str, str]:
    """The answers (q0, q1, …) of a submitted task form, as the stage's task type reads them."""
    task = task_type_for(stage)
    return {k: task.form_value(data=data, key=k) for k in data if k[:1] == "q" and k[1:].isdigit()}


def _invited_worker(request: HttpRequest, run: Run) -> Worker | None:
    """The worker whose invitation link opened this session, if it is still valid for `run`
    and its consent is current. A typed id, a staff login or a revoked link is no one."""
    pk = request.session.get(SESSION_WORKER)
    if not isinstance(pk, int):
        return None
    return invited_worker(run=run, worker_id=pk, provider=PROVIDER)


def _not_invited(request: HttpRequest) -> HttpResponse:
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
    batches = Batch.objects.filter(
        run=run, provider=PROVIDER, status=BatchStatus.PUBLISHED
    ).order_by("pk")
    return render(request, "annotation/work_join.html", {"run": run, "batches": batches})


@require_http_methods(["GET"])
def work_start(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch, pk=batch_id, provider=PROVIDER)
    worker = _invited_worker(request, batch.run)
    if worker is None:
        return _not_invited(request)
    return render(request, "annotation/work_start.html", {"batch": batch, "worker": worker})


def work_next(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id, provider=PROVIDER)
    worker = _invited_worker(request, batch.run)
    if worker is None:
        return _not_invited(request)
    try:
        assignment = assignment_claim_next(batch=batch, worker=worker)
    except (PoolConflict, ServiceError) as exc:
        return render(
            request, "annotation/work_done.html", {"batch": batch, "reason": str(exc)}, status=403
        )
    if assignment is None:
        return render(request, "annotation/work_done.html", {"batch": batch})
    return redirect("work-assignment", assignment_id=assignment.pk)


def _started_at(value: str) -> datetime | None:
    """The page's first-answer time (milliseconds since the epoch), or None if unreadable."""
    try:
        return datetime.fromtimestamp(int(value) / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


@require_http_methods(["GET", "POST"])
def work_assignment(request: HttpRequest, assignment_id: int) -> HttpResponse:
    worker_id = request.session.get(SESSION_WORKER)
    page = (
        task_page(assignment_id=assignment_id, worker_id=worker_id, provider=PROVIDER)
        if isinstance(worker_id, int)
        else None
    )
    if page is None:  # not theirs, not a local batch, or no valid invitation
        raise Http404("no such assignment for this worker")
    error = None
    if request.method == "POST":
        answers = answers_from(request.POST, page.stage)
        try:
            assignment_submit(
                assignment_id=page.assignment_id,
                worker=Worker.objects.get(pk=page.worker_id),
                answers=answers,
                started_at=_started_at(request.POST.get("started_at", "")),
            )
        except TooLate as exc:  # the form cannot be sent again: offer a new task instead
            context = {"reason": str(exc), "next": Batch.objects.get(pk=page.batch_id)}
            return render(request, "annotation/work_done.html", context, status=409)
        except (AnswerError, ServiceError) as exc:
            error = str(exc)
        else:
            messages.success(request, "Thank you, your answers were saved.")
            return redirect("work-next", batch_id=page.batch_id)
    elif page.state != AssignmentState.ACCEPTED:
        return redirect("work-next", batch_id=page.batch_id)
    view = hit_view(hit_id=page.hit_id)
    return render(request, view["template"], {**view, "error": error}, status=400 if error else 200)


def _image_response(image: Image) -> HttpResponse:
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
    return _jpeg_response(data)


def _jpeg_response(data: bytes) -> HttpResponse:
    """The re-encoded JPEG: only ever an image type, no file name, nothing to sniff."""
    response = HttpResponse(data, content_type="image/jpeg")
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=86400"
    response["Content-Security-Policy"] = "default-src 'none'"
    return response


def batch_image(request: HttpRequest, token: str) -> HttpResponse:
    """An image of a batch's pages, by the batch's random token for it. Once cached on disk
    it is served with no SQL (the token's image from memory): 20 of a HIT page's requests."""
    image_id = batch_image_id(token)
    if image_id is None:
        raise Http404("no such image")
    try:
        return _jpeg_response(cache_path_for(image_id).read_bytes())
    except FileNotFoundError:  # not cached yet: fetch (local files) or wait for the job
        return _image_response(
            get_object_or_404(Image.objects.select_related("dataset"), pk=image_id)
        )


@login_required
def staff_image(request: HttpRequest, image_id: int) -> HttpResponse:
    """An image by its id, for the researcher pages (the review queue): staff see any; a
    member sees the images of datasets used by their projects' runs (404 for the others)."""
    require(request.user, Action.VIEW)
    images = Image.objects.select_related("dataset")
    if not is_staff(request.user):
        images = images.filter(dataset__runs__in=visible_runs(request.user)).distinct()
    return _image_response(get_object_or_404(images, pk=image_id))
