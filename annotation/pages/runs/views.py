"""A run's page (funnel, progress, agreement, answer shares, spend, jobs; charts drawn by the
vendored Chart.js from the same numbers shown in tables) and its JSON for live updates."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.errors import ServiceError, page_message
from annotation.flow_registry import flow_for_kind
from annotation.models import Run
from annotation.paths import paths_hidden
from annotation.permissions import Action, can, require
from annotation.selectors.reviews.reviews import reviews_held_fast_count
from annotation.selectors.runs.run_page import run_funnel, run_jobs, run_page_data
from annotation.services.work.speed_policy import speed_rule
from pipeline.errors import InputError


@login_required
@require_GET
def run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    runs = Run.objects.select_related("dataset", "project")
    run = get_object_or_404(runs, pk=run_id)
    require(request.user, Action.VIEW, run=run)
    data = run_page_data(run)
    # Never older than its jobs just read (`run_status`); the refresh keeps what the page
    # reads of the run's dataset and project loaded with it.
    run.refresh_from_db(from_queryset=runs)
    flow = flow_for_kind(run.kind)
    context = {
        "run": run,
        "data": data,
        "can_act": can(request.user, Action.ACT, run=run),
        "batches": run.batches.order_by("pk"),
        "speed_rule": speed_rule(run),
        "held_fast": reviews_held_fast_count(run=run),
        "run_jobs": [(name, label) for name, (label, _) in flow.run_jobs.items()] if flow else [],
        "run_inputs": [(name, spec.label) for name, spec in flow.run_inputs.items()]
        if flow
        else [],
    }
    return render(request, "annotation/run_page.html", context)


@login_required
@require_GET
def run_status(request: HttpRequest, run_id: int) -> JsonResponse:
    """What the page refreshes while a job runs: the run's status, its funnel and jobs."""
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.VIEW, run=run)
    # The jobs first, then the run: a job's last step commits the run's new status with its
    # own success, so a status read after the jobs is never older than they are. Read the
    # other way round, a poll could show the job done beside the status before it, and the
    # page stops polling once no job is live.
    jobs = run_jobs(run)
    run.refresh_from_db()
    funnel = run_funnel(run)
    return JsonResponse(
        {
            "status": run.status,
            "status_label": run.get_status_display(),  # in the flow's words
            "funnel": {"labels": [s for s, _ in funnel], "counts": [n for _, n in funnel]},
            "jobs": jobs,
        }
    )


@login_required
@require_POST
def run_job_start(request: HttpRequest, run_id: int, name: str) -> HttpResponse:
    """Start one of the flow's jobs (stage 1, proposals) with its defaults; the page then
    follows its progress."""
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.ACT, run=run)
    flow = flow_for_kind(run.kind)
    if flow is None or name not in flow.run_jobs:
        raise Http404("no such job for this run")
    try:
        job = flow.run_jobs[name][1](run)
    except (ServiceError, InputError) as exc:
        messages.error(request, paths_hidden(f"Not started: {page_message(exc)}"))
    else:
        messages.success(request, f"Job {job.pk} started.")
    return redirect("run-page", run_id=run.pk)
