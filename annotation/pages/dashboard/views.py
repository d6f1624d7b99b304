"""The dashboard at `/`: the user's runs with their jobs, batches and exports, filtered; staff
see every run and every job (also jobs of no run, such as dataset imports)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from annotation.models import RunKind, RunStatus
from annotation.permissions import Action, can, is_staff, require, visible_projects, visible_runs
from annotation.providers import providers


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    from annotation.selectors.links import public_base_url
    from annotation.selectors.runs.dashboard import (
        dashboard_busy,
        dashboard_filter_from,
        dashboard_filtered,
        dashboard_runs,
    )
    from annotation.selectors.runs.listing import dataset_list

    require(request.user, Action.VIEW)  # a user of no project: ask staff to add them
    # Staff: every run and job (also jobs of no run, such as dataset imports), unfiltered.
    runs = None if is_staff(request.user) else visible_runs(request.user)
    chosen = dashboard_filter_from(request.GET)
    entries = dashboard_runs(
        base=public_base_url(request), runs=dashboard_filtered(runs=runs, **chosen)
    )
    acting = set(visible_runs(request.user, Action.ACT).values_list("pk", flat=True))
    for entry in entries:  # the template offers a run's buttons to its researchers only
        entry["can_act"] = entry["run"].pk in acting
    return render(
        request,
        "annotation/dashboard.html",
        {
            "runs": entries,
            "busy": dashboard_busy(runs=runs),
            "filter": chosen,
            "filtering": any(chosen.values()),
            "projects": visible_projects(request.user).order_by("name"),
            "kinds": RunKind.choices,
            "statuses": RunStatus.choices,
            "datasets_count": 0 if entries else dataset_list(user=request.user).count(),
            "stall_seconds": settings.CROWDVL_JOB_STALL_SECONDS,
            "is_admin": can(request.user, Action.ADMIN),
            "provider_pages": [
                (reverse(name), label) for p in providers() for name, label in p.staff_pages
            ],
        },
    )
