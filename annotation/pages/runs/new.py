"""The new-run page (`/runs/new/`, `/runs/new/<kind>/`): researchers create a run of any
registered flow from the browser, in one of their projects.

The run form is built from the flow's described settings (`Flow.settings`: label, unit, range,
help, default), so a new flow gets its form without a line here, and it is checked by the same
`run_create` as the CLI and the API: an error names the setting and is shown next to its
field."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.errors import ServiceError
from annotation.flow_registry import flow_for_kind, flows
from annotation.models import Dataset, Project, RunKind
from annotation.pages.choices import project_choice
from annotation.pages.form_errors import form_refusal
from annotation.permissions import Action, is_staff, require, visible_projects
from annotation.run_settings import Setting
from annotation.services.runs.runs import run_create_any
from pipeline.errors import InputError


def _described_field(setting: Setting) -> forms.Field:
    """A form field for one of the flow's settings, as the flow describes it (label, unit,
    range, help, default)."""
    label = f"{setting.label} ({setting.unit})" if setting.unit else setting.label
    common: dict[str, Any] = {
        "label": label,
        "help_text": setting.describe(),
        "initial": setting.default,
        # Left empty: the flow's default (or nothing, for an optional setting).
        "required": False,
    }
    if setting.kind == "bool":
        return forms.BooleanField(**common)
    if setting.kind == "int":
        return forms.IntegerField(
            min_value=_bound(setting.low), max_value=_bound(setting.high), **common
        )
    if setting.kind == "number":
        return forms.FloatField(min_value=setting.low, max_value=setting.high, **common)
    if setting.kind == "choice":
        return forms.ChoiceField(choices=[(c, c) for c in setting.choices], **common)
    if setting.kind in ("list", "object"):
        return forms.JSONField(**common)
    if setting.key == "consent":
        return forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), **common)
    return forms.CharField(max_length=500, **common)  # text, int_or_all (checked by the flow)


def _bound(value: float | None) -> int | None:
    # Seeds span 64 bits: no browser-side bound that wide is useful.
    return None if value is None or abs(value) > 2**53 else int(value)


class RunForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    name = forms.CharField(max_length=200, required=False)
    project = forms.ModelChoiceField(
        queryset=Project.objects.none(),
        required=False,
    )

    def __init__(
        self,
        *args: Any,
        settings: tuple[Setting, ...],
        projects: QuerySet[Project],
        project_required: bool,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        project = project_choice(self, projects=projects, required=project_required)
        project.help_text = "" if project_required else "default: the Default project"
        for setting in settings:  # in the flow's order
            field = _described_field(setting)
            field.advanced = setting.advanced  # type: ignore[attr-defined]
            self.fields[f"config_{setting.key}"] = field

    def main_fields(self) -> list[forms.BoundField]:
        return [f for f in self if not getattr(f.field, "advanced", False)]

    def advanced_fields(self) -> list[forms.BoundField]:
        return [f for f in self if getattr(f.field, "advanced", False)]

    def advanced_errors(self) -> bool:
        return any(f.errors for f in self.advanced_fields())

    def config(self) -> dict[str, Any]:
        """The settings given: an empty field is left out (the flow's default applies)."""
        return {
            k[7:]: v
            for k, v in self.cleaned_data.items()
            if k.startswith("config_") and v not in (None, "")
        }


def _choices() -> list[dict[str, Any]]:
    """Each flow in the registry's words: what a run builds, its paper, the steps machines
    run before the crowd (the run page's jobs) and the stages workers do."""
    labels = dict(RunKind.choices)
    return [
        {
            "kind": flow.run_kind,
            "label": labels.get(flow.run_kind, flow.name),
            "summary": flow.summary,
            "paper": flow.paper,
            "jobs": [label for label, _ in flow.run_jobs.values()],
            "stages": [label for _, label in flow.stages],
        }
        for flow in flows()
    ]


@login_required
@require_http_methods(["GET", "POST"])
def run_new_page(request: HttpRequest, kind: str | None = None) -> HttpResponse:
    require(request.user, Action.ACT)  # in some project; the chosen one is checked below
    # From a finished import ("Start a run on ..."): the dataset chosen for every flow.
    dataset = request.GET.get("dataset", "")
    dataset = dataset if dataset.isdigit() else ""
    if kind is None:
        chooser: dict[str, Any] = {"choices": _choices(), "dataset": dataset}
        return render(request, "annotation/run_new.html", chooser)
    if kind not in RunKind.values:
        raise Http404("no such kind of run")
    flow = flow_for_kind(kind)
    form = RunForm(
        request.POST or None,
        settings=flow.settings if flow is not None else (),
        projects=visible_projects(request.user, Action.ACT),
        project_required=not is_staff(request.user),
        initial={"dataset": dataset} if dataset else None,
    )
    if request.method == "POST" and form.is_valid():
        project = form.cleaned_data["project"]
        require(request.user, Action.ACT, project=project)
        try:
            run = run_create_any(
                project=project,
                dataset=form.cleaned_data["dataset"],
                kind=kind,
                name=form.cleaned_data["name"],
                config=form.config(),
                owner=request.user,
            )
        except (InputError, ServiceError) as exc:
            form_refusal(form, exc, prefix="config_")
        else:
            messages.success(request, f"Run {run.pk} created.")
            return redirect("run-page", run_id=run.pk)  # where its jobs and batches start
    context = {"form": form, "kind": RunKind(kind)}
    status = 400 if request.method == "POST" else 200
    return render(request, "annotation/run_new.html", context, status=status)
