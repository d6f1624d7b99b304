"""A background job's buttons on the dashboard: `/jobs/<id>/resume/` and `/jobs/<id>/cancel/`."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_http_methods

from annotation.errors import ServiceError
from annotation.models import Job
from annotation.permissions import Action, require
from annotation.services.job_recovery import job_cancel, job_resume


@login_required
@require_http_methods(["POST"])
def job_action(request: HttpRequest, job_id: int, action: str) -> HttpResponse:
    """Resume (re-send its missing steps) or cancel a pending or running job."""
    job = get_object_or_404(Job.objects.select_related("run"), pk=job_id)
    # A run's job: its researchers; a job of no run (a dataset import): any researcher.
    require(request.user, Action.ACT, run=job.run)
    who = request.user.get_username()
    try:
        if action == "resume":
            sent = job_resume(job_id=job_id, reason="by hand", by=who)
            messages.success(request, f"Job {job_id}: {len(sent)} step(s) sent again.")
        else:
            job_cancel(job_id=job_id, by=who)
            messages.success(request, f"Job {job_id} cancelled.")
    except ServiceError as exc:
        messages.error(request, str(exc))
    return redirect("dashboard")
