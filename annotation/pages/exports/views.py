"""A run's exports page: every version with its manifest's counts and its files (`data/`'s
Parquet files too) with their sizes, downloaded as attachments streamed from the export's
folder; a button starting a new export, and per version one packing its release bundle
(a job; the bundle is then downloaded from the page).

A file is named by the export's id and its path in the version folder, which must be one of
the names the folder's walk lists: no path from the URL ever reaches the file system."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.errors import ServiceError, page_message
from annotation.flow_registry import flow_for_kind
from annotation.models import Export, Run
from annotation.pages.exports.forms import ExportForm
from annotation.pages.jobs.next_steps import job_next_steps
from annotation.paths import paths_hidden
from annotation.permissions import Action, can, require
from annotation.selectors.release.exports import (
    export_bundle,
    export_bundle_jobs,
    export_datasheet,
    export_file_entries,
    export_file_named,
    export_jobs_recent,
)
from annotation.services.jobs.jobs import LIVE
from annotation.services.release.release_bundle import export_bundle_start
from pipeline.errors import InputError


def _numbers(values: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (k, v) for k, v in values.items() if isinstance(v, int | float) and not isinstance(v, bool)
    ]


def _counts(manifest: dict[str, Any]) -> list[tuple[str, Any]]:
    """The manifest's numbers for the page: its top-level ones and its `counts`."""
    counts = manifest.get("counts")
    return _numbers(manifest) + (_numbers(counts) if isinstance(counts, dict) else [])


@login_required
@require_GET
def run_exports_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.VIEW, run=run)
    packing = export_bundle_jobs(run=run)
    exports = [
        {
            "export": e,
            "files": export_file_entries(e),
            "bundle": export_bundle(e),
            "bundle_job": packing.get(e.pk),
            "counts": _counts(e.manifest),
            # Read in the console, not only downloaded (older manifests: paths hidden here).
            "datasheet": export_datasheet(e),
            "manifest": json.dumps(paths_hidden(e.manifest), indent=2, default=str),
        }
        for e in run.exports.order_by("-created_at", "-pk")
    ]
    flow = flow_for_kind(run.kind)
    recent = export_jobs_recent(run=run)
    can_download = can(request.user, Action.DOWNLOAD, run=run)
    jobs = [
        {"job": job, "next_steps": job_next_steps(job, run_link=False, downloads=can_download)}
        for job in recent
    ]
    context = {
        "run": run,
        "exports": exports,
        # Export and bundle jobs running or just ended: the page follows them while they run.
        "jobs": jobs,
        "busy": any(job.state in LIVE for job in recent),
        "can_download": can_download,
        "can_act": can(request.user, Action.ACT, run=run),
        "can_export": can(request.user, Action.ACT, run=run)
        and flow is not None
        and flow.start_export is not None,
        "form": ExportForm(run=run),
    }
    return render(request, "annotation/run_exports.html", context)


@login_required
@require_GET
def export_file(request: HttpRequest, export_id: int, name: str) -> FileResponse:
    export = get_object_or_404(Export.objects.select_related("run"), pk=export_id)
    require(request.user, Action.DOWNLOAD, run=export.run)
    match = export_file_named(export, name)
    if match is None:
        raise Http404("no such file in this export")
    if match.suffix == ".md" and request.GET.get("view"):
        # The datasheet read in the browser; as plain text (never rendered as HTML).
        return FileResponse(
            match.open("rb"), filename=match.name, content_type="text/plain; charset=utf-8"
        )
    return FileResponse(match.open("rb"), as_attachment=True, filename=match.name)


@login_required
@require_POST
def export_new(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.ACT, run=run)
    flow = flow_for_kind(run.kind)
    if flow is None or flow.start_export is None:
        raise Http404("this kind of run has no export")
    form = ExportForm(request.POST, run=run)
    if not form.is_valid():
        messages.error(request, f"No export started: {form.errors.as_text()}")
        return redirect("run-exports", run_id=run.pk)
    try:
        job = flow.start_export(run=run, release=form.release())
    except (ServiceError, InputError) as exc:
        messages.error(request, paths_hidden(f"No export started: {page_message(exc)}"))
    else:
        messages.success(request, f"Export job {job.pk} started: it is followed below.")
    return redirect("run-exports", run_id=run.pk)


@login_required
@require_GET
def export_bundle_file(request: HttpRequest, export_id: int) -> FileResponse:
    export = get_object_or_404(Export.objects.select_related("run"), pk=export_id)
    require(request.user, Action.DOWNLOAD, run=export.run)
    bundle = export_bundle(export)
    if bundle is None:
        raise Http404("this version has no release bundle yet")
    return FileResponse(bundle.path.open("rb"), as_attachment=True, filename=bundle.name)


@login_required
@require_POST
def export_bundle_new(request: HttpRequest, export_id: int) -> HttpResponse:
    export = get_object_or_404(Export.objects.select_related("run"), pk=export_id)
    # Packing starts a job (ACT); what it makes leaves the installation (DOWNLOAD).
    require(request.user, Action.ACT, run=export.run)
    require(request.user, Action.DOWNLOAD, run=export.run)
    try:
        job = export_bundle_start(export=export)
    except ServiceError as exc:
        messages.error(request, paths_hidden(f"No bundle packed: {page_message(exc)}"))
    else:
        messages.success(
            request,
            f"Bundle job {job.pk} started for v{export.version}: it is followed below.",
        )
    return redirect(f"{reverse('run-exports', args=[export.run_id])}#export-{export.pk}")
