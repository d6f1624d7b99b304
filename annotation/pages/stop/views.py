"""The kill switch at `/stop/`: stop every HIT still on offer, of one run or of the
installation."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_http_methods

from annotation.models import Run
from annotation.permissions import Action, require
from annotation.services.runs.batches import batches_stop
from pipeline.errors import InputError


@login_required
@require_http_methods(["POST"])
def stop_hits(request: HttpRequest) -> HttpResponse:
    """The kill switch: every HIT still on offer, of one run or of the installation."""
    run_id = request.POST.get("run") or None
    run = get_object_or_404(Run, pk=run_id) if run_id else None
    # One run's HITs: its researchers; every HIT of the installation: staff.
    require(request.user, Action.ACT if run else Action.ADMIN, run=run)
    if request.POST.get("confirm") != "STOP":
        messages.error(request, "Type STOP to confirm: nothing was stopped.")
        return redirect("dashboard")
    try:
        result = batches_stop(run=run, reason=request.POST.get("reason") or "kill switch")
    except InputError as exc:
        messages.error(request, str(exc))
        return redirect("dashboard")
    messages.success(request, f"Stopped batches: {result['stopped'] or 'none'}.")
    for pk, error in result["failed"].items():
        messages.error(request, f"Batch {pk} could not be stopped ({error}); press again.")
    return redirect("dashboard")
