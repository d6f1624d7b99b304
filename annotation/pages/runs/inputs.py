"""A run's inputs from the browser (`Flow.run_inputs`): a form per input, built from its
options, with the file uploaded or named in the import folder; checked and applied by
`services/runs/run_inputs.py`, as the API does."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotation.errors import ServiceError
from annotation.flow_registry import InputOption, RunInput
from annotation.models import Run
from annotation.pages.choices import PartlyDisabledSelect
from annotation.pages.form_errors import form_refusal
from annotation.permissions import Action, require
from annotation.services.runs.run_inputs import run_input_apply, run_inputs_of
from pipeline.errors import InputError


def _field(option: InputOption) -> forms.Field:
    if option.kind == "bool":
        return forms.BooleanField(label=option.label, required=False, help_text=option.help)
    if option.kind == "number":
        return forms.FloatField(label=option.label, required=option.required, help_text=option.help)
    if option.kind == "choice":
        choices = [(c, c) for c in option.choices]
        if not option.required:
            choices.insert(0, ("", "---------"))
        disabled = option.unavailable() if option.unavailable else {}
        return forms.ChoiceField(
            label=option.label,
            choices=choices,
            required=option.required,
            help_text=option.help,
            widget=PartlyDisabledSelect(disabled=disabled),
        )
    return forms.CharField(
        label=option.label, required=option.required, max_length=500, help_text=option.help
    )


def input_form(spec: RunInput, data: Any = None, files: Any = None) -> forms.Form:
    form = forms.Form(data, files)
    if spec.file != "none":
        form.fields["file"] = forms.FileField(
            required=False, label="File to upload", help_text=spec.file_help
        )
        form.fields["path"] = forms.CharField(
            required=False,
            max_length=500,
            label="or a file already in the import folder",
            help_text="a path inside CROWDVL_IMPORT_DIR",
        )
    for key, option in spec.options.items():
        form.fields[key] = _field(option)
    return form


@login_required
@require_http_methods(["GET", "POST"])
def run_input_page(request: HttpRequest, run_id: int, name: str) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.ACT, run=run)
    spec = run_inputs_of(run).get(name)
    if spec is None:
        raise Http404("no such input for this run")
    form = input_form(spec, request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        options = {k: form.cleaned_data[k] for k in spec.options}
        try:
            message, _job = run_input_apply(
                run=run,
                name=name,
                options=options,
                upload=form.cleaned_data.get("file"),
                path=form.cleaned_data.get("path") or None,
            )
        except (InputError, ServiceError) as exc:
            form_refusal(form, exc, fields=spec.fields)
        else:
            messages.success(request, message)
            return redirect("run-page", run_id=run.pk)
    context = {"run": run, "spec": spec, "form": form}
    status = 400 if request.method == "POST" else 200
    return render(request, "annotation/run_input.html", context, status=status)
