"""The researcher's page of a panel batch: the study link to paste into the panel, its
settings, the figures, the upload of the panel's CSV of approved participants, the bonus CSV."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.crowd.panel import options
from annotation.crowd.panel.approvals import ConfirmReport, panel_confirm, upload_read
from annotation.crowd.panel.selectors import bonus_csv, panel_figures
from annotation.crowd.panel.services import panel_settings_set
from annotation.errors import ServiceError
from annotation.models import Batch
from annotation.permissions import Action, can, require
from annotation.selectors.links import public_base_url
from pipeline.errors import InputError


def _batch(batch_id: int) -> Batch:
    return get_object_or_404(
        Batch.objects.select_related("run"), pk=batch_id, provider=options.PROVIDER
    )


def _page(
    request: HttpRequest,
    batch: Batch,
    *,
    report: ConfirmReport | None = None,
    error: str | None = None,
    status: int = 200,
) -> HttpResponse:
    settings = options.settings_of(batch)
    context: dict[str, Any] = {
        "batch": batch,
        "settings": settings,
        "outcomes": [
            (o, options.OUTCOME_LABELS[o], settings["completion"][o]) for o in options.OUTCOMES
        ],
        "link": options.study_link(public_base_url(request), batch, settings),
        "figures": panel_figures(batch=batch),
        "can_act": can(request.user, Action.ACT, run=batch.run),
        "can_download": can(request.user, Action.DOWNLOAD, run=batch.run),
        "report": report,
        "error": error,
    }
    return render(request, "annotation/panel_batch.html", context, status=status)


@login_required
@require_GET
def panel_batch_page(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = _batch(batch_id)
    require(request.user, Action.VIEW, run=batch.run)
    return _page(request, batch)


@login_required
@require_POST
def panel_batch_settings(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = _batch(batch_id)
    require(request.user, Action.ACT, run=batch.run)
    post = request.POST
    changes: dict[str, Any] = {
        "completion": {o: post.get(o, "").strip() for o in options.OUTCOMES if o in post}
    }
    for key in ("id_param", "name", "completion_url"):
        if key in post:
            changes[key] = post[key].strip()
    try:
        panel_settings_set(batch=batch, changes=changes)
    except (InputError, ServiceError) as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Panel settings saved.")
    return redirect("panel-batch", batch_id=batch.pk)


@login_required
@require_POST
def panel_batch_confirm(request: HttpRequest, batch_id: int) -> HttpResponse:
    """Upload the panel's CSV of approved participants: their waiting work counts from now."""
    batch = _batch(batch_id)
    require(request.user, Action.ACT, run=batch.run)
    upload = request.FILES.get("file")
    if upload is None:
        return _page(request, batch, error="choose the panel's CSV file first", status=400)
    name = upload.name or "upload.csv"
    try:
        report = panel_confirm(
            batch=batch,
            data=upload_read(upload, file=name),  # its size checked before it is read
            file=name,
            release_unlisted=post_flag(request, "release_unlisted"),
        )
    except (InputError, ServiceError) as exc:
        return _page(request, batch, error=str(exc), status=400)
    return _page(request, batch, report=report)


def post_flag(request: HttpRequest, key: str) -> bool:
    return request.POST.get(key, "") in ("1", "on", "true", "yes")


@login_required
@require_GET
def panel_batch_bonuses(request: HttpRequest, batch_id: int) -> HttpResponse:
    """The batch's bonuses for the panel to pay: participant_id, amount, reason."""
    batch = _batch(batch_id)
    require(request.user, Action.DOWNLOAD, run=batch.run)  # participant ids
    response = HttpResponse(bonus_csv(batch=batch), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="batch-{batch.pk}-bonuses.csv"'
    return response
