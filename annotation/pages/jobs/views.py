"""A background job's page (`/jobs/<id>/`: its state and progress, refreshed while it runs,
then where it leads: `next_steps.py`) and its buttons on the dashboard: `/jobs/<id>/resume/`
and `/jobs/<id>/cancel/`."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation.errors import ServiceError
from annotation.models import Job
from annotation.pages.jobs.next_steps import job_next_steps
from annotation.permissions import Action, can
from annotation.selectors.runs.job_walls import job_require
from annotation.services.jobs.job_recovery import job_cancel, job_resume
from annotation.services.jobs.jobs import LIVE


@login_required
@require_GET
def job_page(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(Job.objects.select_related("run"), pk=job_id)
    # A run's job: whoever may view the run; an encoding job: its set's project's members; a
    # dataset import: any member.
    job_require(user=request.user, job=job, action=Action.VIEW)
    downloads = job.run is None or can(request.user, Action.DOWNLOAD, run=job.run)
    steps = job_next_steps(job, downloads=downloads)
    context = {"job": job, "busy": job.state in LIVE, "next_steps": steps}
    return render(request, "annotation/job.html", context)


@login_required
@require_http_methods(["POST"])
def job_action(request: HttpRequest, job_id: int, action: str) -> HttpResponse:
    """Resume (re-send its missing steps) or cancel a pending or running job."""
    job = get_object_or_404(Job.objects.select_related("run"), pk=job_id)
    # A run's job: its researchers; an encoding job: its set's project's researchers; a
    # dataset import: any researcher.
    job_require(user=request.user, job=job, action=Action.ACT)
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
