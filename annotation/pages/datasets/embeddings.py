"""A dataset's stored embeddings (`/datasets/<id>/embeddings/`): each set with its provenance,
size and job progress, a delete button, and the "Encode with a model" form, which first
shows the estimate (Estimate) and starts the job on Start. Datasets are shared, but a set
belongs to the project it was encoded for (issue 47): the page lists your projects' sets,
encoding is for a project where you are a researcher, deleting needs that role in the set's
project (another project's set answers 404, as an unknown id)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.encoders.models import EmbeddingSet, EmbeddingState
from annotation.encoders.selectors import embedding_set_estimate, embedding_sets_of
from annotation.encoders.services import DEVICES, DTYPES, embedding_set_delete, embedding_set_start
from annotation.extras import extra_missing
from annotation.models import Dataset, Project
from annotation.pages.choices import PartlyDisabledSelect, project_choice
from annotation.pages.form_errors import form_refusal
from annotation.paths import paths_hidden
from annotation.permissions import Action, can, is_staff, require, visible_projects
from annotation.services.runs.projects import project_default
from pipeline.errors import InputError


class EncodeForm(forms.Form):
    library = forms.ChoiceField(
        choices=[("transformers", "transformers")],
        label="Model library",
        help_text="what reads the checkpoint. Default: transformers.",
    )

    model_name = forms.CharField(
        max_length=200,
        required=False,
        label="Model name",
        help_text="how runs, exports and reports name the model. Default: the folder's name.",
    )
    checkpoint = forms.CharField(
        max_length=500,
        label="Checkpoint folder",
        help_text="a transformers CLIP or SigLIP folder, relative to CROWDVL_IMPORT_DIR",
    )
    device = forms.ChoiceField(
        choices=[(d, d) for d in DEVICES],
        initial="auto",
        label="Device",
        help_text="where the model runs. Default: auto (a GPU if the worker has one, else "
        "the CPU).",
    )
    dtype = forms.ChoiceField(
        choices=[(d, d) for d in DTYPES],
        initial="float16",
        label="Stored as (number type)",
        help_text="the embeddings' precision on disk; float16 halves the size. Default: float16.",
    )
    license = forms.CharField(
        max_length=200,
        required=False,
        label="License of the weights",
        help_text="named in every export that uses them. Default: none given.",
    )
    source = forms.CharField(
        max_length=500,
        required=False,
        label="Source of the weights",
        help_text="where the weights came from (a URL or a paper). Default: none given.",
    )

    project = forms.ModelChoiceField(
        queryset=Project.objects.none(),
        label="For the runs of project",
        help_text="only this project's members see, use or delete the set",
    )

    def __init__(
        self, *args: Any, projects: QuerySet[Project], project_required: bool, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        field = project_choice(self, projects=projects, required=project_required)
        if not project_required:
            field.help_text += "; default: the Default project"
        # Offered disabled, saying why, where this installation lacks the encoders extra.
        missing = extra_missing("encoders")
        self.fields["library"].widget = PartlyDisabledSelect(
            choices=self.fields["library"].widget.choices,
            disabled={"transformers": missing} if missing else {},
        )


@login_required
def dataset_embeddings_page(request: HttpRequest, dataset_id: int) -> HttpResponse:
    require(request.user, Action.VIEW)
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    may_act = can(request.user, Action.ACT)
    form = EncodeForm(
        request.POST or None,
        projects=visible_projects(request.user, Action.ACT),
        project_required=not is_staff(request.user),
    )
    estimate = None
    if request.method == "POST":
        require(request.user, Action.ACT)
        if form.is_valid():
            options = {k: v for k, v in form.cleaned_data.items() if k != "library"}
            try:
                options["project"] = options["project"] or project_default()
                # The form's choices are the projects where the user may act: checked again.
                require(request.user, Action.ACT, project=options["project"])
                if "start" in request.POST:
                    es = embedding_set_start(dataset=dataset, **options)
                    messages.info(request, f"Encoding with {es.label}: {es.state}.")
                    return redirect("dataset-embeddings", dataset_id=dataset.pk)
                estimate = embedding_set_estimate(dataset=dataset, checkpoint=options["checkpoint"])
            except InputError as exc:
                form_refusal(form, exc)
    sets = list(embedding_sets_of(dataset=dataset, projects=visible_projects(request.user)))
    context = {
        "dataset": dataset,
        "sets": sets,
        "form": form,
        "estimate": estimate,
        "may_act": may_act,
        "busy": any(es.state == EmbeddingState.BUILDING for es in sets),
    }
    return render(
        request,
        "annotation/dataset_embeddings.html",
        context,
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def embedding_set_delete_page(request: HttpRequest, dataset_id: int, set_id: int) -> HttpResponse:
    """Delete a set of the user's project; refused, naming the runs, while runs that used it
    exist, unless the form's `force` is set (the button offered after that refusal)."""
    require(request.user, Action.ACT)
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    es = get_object_or_404(
        EmbeddingSet.objects.select_related("project"), pk=set_id, dataset=dataset
    )
    require(request.user, Action.ACT, project=es.project)
    label = es.label
    try:
        embedding_set_delete(embedding_set=es, force=request.POST.get("force") == "1")
    except InputError as exc:
        messages.error(request, paths_hidden(exc.message))
    else:
        messages.info(request, f"Embeddings {label} deleted.")
    return redirect("dataset-embeddings", dataset_id=dataset.pk)
