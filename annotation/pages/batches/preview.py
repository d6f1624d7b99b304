"""A batch's task pages previewed by the researchers of its run (draft or published): the
real HITs rendered by the workers' own template, marked as a preview; a posted form is read
as a submit would read it and nothing is stored."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation.models import Batch
from annotation.pages.work.forms import answers_from
from annotation.permissions import Action, require
from annotation.selectors.work.images import with_staff_images
from annotation.selectors.work.preview import PreviewPage, batch_preview
from annotation.services.work.submit import answers_read
from pipeline.errors import InputError


@login_required
@require_http_methods(["GET", "POST"])
def batch_preview_page(request: HttpRequest, batch_id: int, number: int = 1) -> HttpResponse:
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id)
    require(request.user, Action.VIEW, run=batch.run)
    page = batch_preview(batch=batch, number=number)
    if page is None:
        raise Http404("no such task in this batch")
    error = preview_refusal(request, batch=batch, page=page) if request.method == "POST" else None
    if request.method == "POST" and error is None:
        messages.success(request, "Preview: a worker's submit would be accepted. Not stored.")

    def link(n: int) -> str | None:
        return reverse("batch-preview-task", args=[batch.pk, n]) if 1 <= n <= page.total else None

    preview = {
        "label": f"batch {batch.pk} ({batch.status})",
        "number": page.number,
        "total": page.total,
        "previous": link(page.number - 1),
        "next": link(page.number + 1),
        "back": reverse("batch-launch", args=[batch.pk]),
    }
    return preview_response(request, page=page, preview=preview, error=error)


def preview_refusal(request: HttpRequest, *, batch: Batch, page: PreviewPage) -> str | None:
    """Why a worker's submit of the posted form would be refused (nothing is stored), or None."""
    answers = answers_from(request.POST, batch.stage)
    try:
        answers_read(hit_id=page.view["hit_id"], stage=batch.stage, answers=answers)
    except InputError as exc:  # AnswerError: what the submit refuses
        return f"A worker's submit would be refused: {exc}"
    return None


def preview_response(
    request: HttpRequest, *, page: PreviewPage, preview: dict[str, Any], error: str | None
) -> HttpResponse:
    """A task page as its workers see it, marked as a preview (`preview`: its banner)."""
    context = {**page.view, "instructions": page.instructions, "error": error, "preview": preview}
    response = render(request, page.view["template"], context, status=400 if error else 200)
    # Workers' image URLs need an assignment: the preview loads them as a researcher does.
    response.content = with_staff_images(response.content, page.view["image_places"])
    return response
