"""A run's texts for workers in the console: the information and consent text and each
stage's instructions, read, previewed (the stage's real task page, in a sandboxed frame) and
saved through `services/runs/run_texts.py`, as the API and `manage.py run_texts` do."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_http_methods

from annotation.errors import ServiceError
from annotation.models import Batch, Run
from annotation.permissions import Action, can, require
from annotation.selectors.work.invitations import DEFAULT_CONSENT
from annotation.selectors.work.run_texts import instructions_default, run_texts, same_text
from annotation.selectors.work.task_page import hit_view
from annotation.services.runs.run_texts import run_consent_set, run_instructions_set
from annotation.tasktypes import task_type_for
from pipeline.errors import InputError


def _task_page_html(run: Run, stage: str, instructions: str) -> str:
    """The stage's task page as a worker gets it, with `instructions`: the first HIT of the
    stage's newest batch, or the page with no question when no batch has HITs yet."""
    batch = Batch.objects.filter(run=run, stage=stage, hits__isnull=False).order_by("-pk").first()
    hit = batch.hits.order_by("position").first() if batch else None
    task = task_type_for(stage)
    view: dict[str, Any] = (
        hit_view(hit_id=hit.pk)
        if hit
        else {
            "hit_id": "none",
            "template": task.template_name,
            "title": task.title,
            "questions": [],
        }
    )
    preview = {"label": f"the instructions of {task.title}", "number": 1, "total": 1}
    return render_to_string(
        view["template"], {**view, "instructions": instructions, "preview": preview}
    )


@login_required
@require_http_methods(["GET", "POST"])
def run_texts_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.VIEW, run=run)
    texts = run_texts(run)
    drafts: dict[str, str] = {}
    shown: dict[str, str] = {}  # what the preview frame of each text shows
    status = 200
    if request.method == "POST":
        what = request.POST.get("what", "")
        text = request.POST.get("text", "")
        if request.POST.get("do") == "save":
            require(request.user, Action.ACT, run=run)
            try:
                if what == "consent":
                    run_consent_set(run=run, text=text)
                else:
                    run_instructions_set(run=run, stage=what, text=text)
            except (InputError, ServiceError) as exc:
                messages.error(request, f"Not saved: {exc}")
                drafts[what] = text
                status = 400
            else:
                messages.success(request, "Saved: workers see the new text from their next page.")
                return redirect("run-texts", run_id=run.pk)
        else:
            drafts[what] = text
            shown[what] = text
    for entry in texts["instructions"]:
        stage = entry["stage"]
        # The default written out, to edit rather than retype (saved unchanged: the default).
        entry["draft"] = drafts.get(stage, entry["text"] or instructions_default(run, stage))
        if stage in shown:
            default = instructions_default(run, stage)
            own = "" if same_text(shown[stage], default) else shown[stage]
            entry["frame"] = _task_page_html(run, stage, own)
    consent = texts["consent"]
    consent["draft"] = drafts.get("consent", consent["text"])
    if "consent" in shown:
        consent["preview"] = shown["consent"].strip() or DEFAULT_CONSENT
    context = {
        "run": run,
        "consent": consent,
        "instructions": texts["instructions"],
        "can_act": can(request.user, Action.ACT, run=run),
    }
    return render(request, "annotation/run_texts.html", context, status=status)
