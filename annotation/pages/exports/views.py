"""A run's exports page: every version with its manifest's counts and its files, downloaded
as attachments streamed from the export's folder, and a button starting a new export.

A file is named by the export's id and its plain name, which must be one of the files the
folder holds: no path from the URL ever reaches the file system."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.errors import ServiceError
from annotation.flow_registry import flow_for_kind
from annotation.models import Export, Run
from annotation.paths import paths_hidden
from annotation.permissions import Action, can, require
from annotation.selectors.exports import export_datasheet, export_file_named, export_files
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
    exports = [
        {
            "export": e,
            "files": [p.name for p in export_files(e)],
            "counts": _counts(e.manifest),
            # Read in the console, not only downloaded (older manifests: paths hidden here).
            "datasheet": export_datasheet(e),
            "manifest": json.dumps(paths_hidden(e.manifest), indent=2, default=str),
        }
        for e in run.exports.order_by("-created_at", "-pk")
    ]
    flow = flow_for_kind(run.kind)
    context = {
        "run": run,
        "exports": exports,
        "can_download": can(request.user, Action.DOWNLOAD, run=run),
        "can_export": can(request.user, Action.ACT, run=run)
        and flow is not None
        and flow.start_export is not None,
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
    release = {k: request.POST.get(k, "") for k in ("license", "creators", "citation")}
    try:
        job = flow.start_export(run=run, release=release if any(release.values()) else None)
    except (ServiceError, InputError) as exc:
        messages.error(request, paths_hidden(f"No export started: {exc}"))
    else:
        messages.success(request, f"Export job {job.pk} started; reload to see the new version.")
    return redirect("run-exports", run_id=run.pk)
