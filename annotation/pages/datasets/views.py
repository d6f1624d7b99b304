"""The datasets list (`/datasets/`, any member) and the page (for researchers of any project:
datasets are shared) that starts a COCO import (`/datasets/import/`): the upload is stored, a
job imports it, and a status page follows the job's progress."""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from annotation.models import ImageSource, Job, JobState
from annotation.pages.form_errors import form_refusal
from annotation.pages.jobs.next_steps import job_next_steps
from annotation.paths import paths_hidden, paths_hidden_but
from annotation.permissions import Action, require
from annotation.selectors.runs.listing import dataset_list
from annotation.services.datasets.dataset_jobs import JOB_NAME, dataset_import_upload
from annotation.services.datasets.datasets import UPDATE_SOURCE_LABEL
from pipeline.errors import InputError


@login_required
def datasets_page(request: HttpRequest) -> HttpResponse:
    require(request.user, Action.VIEW)
    datasets = list(dataset_list(user=request.user))  # with n_images and n_captions, as the API
    for d in datasets:  # where the images come from, never a server path
        d.where = paths_hidden(d.image_location) if d.image_location else ""  # type: ignore[attr-defined]
    return render(request, "annotation/datasets.html", {"datasets": datasets})


class DatasetImportForm(forms.Form):
    file = forms.FileField(
        label="COCO captions file",
        help_text="a COCO captions JSON (the captions_*.json layout: images and annotations), "
        "checked completely before anything is written",
    )
    name = forms.CharField(
        max_length=200,
        required=False,
        label="Dataset name",
        help_text="how runs and exports name it. Default: the file's name without .json.",
    )
    image_source = forms.ChoiceField(
        choices=ImageSource.choices,
        initial=ImageSource.COCO_URL,
        label="Images from",
        help_text="where workers' browsers get the images (through this app, never the "
        "address itself). Default: the file's coco_url.",
    )
    image_location = forms.CharField(
        max_length=500,
        required=False,
        label="URL prefix or folder",
        help_text="for a URL prefix: the address the file names are appended to; for a local "
        "folder: a folder under CROWDVL_IMPORT_DIR or CROWDVL_IMAGE_DIRS (a relative one is "
        "inside CROWDVL_IMPORT_DIR). Default: none (the file's coco_url needs none).",
    )
    update_image_source = forms.BooleanField(
        required=False,
        label=UPDATE_SOURCE_LABEL,
        help_text="allowed while none of its batches is published. Default: no (a dataset "
        "imported again keeps its images).",
    )


@login_required
def dataset_import_page(request: HttpRequest) -> HttpResponse:
    require(request.user, Action.ACT)
    # "Import again" from a job's page comes back with its settings (?name=...&image_...).
    again = {k: v for k, v in request.GET.items() if k in DatasetImportForm.base_fields}
    form = DatasetImportForm(request.POST or None, request.FILES or None, initial=again)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = dataset_import_upload(
                upload=data["file"],
                name=data["name"] or None,
                image_source=data["image_source"],
                image_location=data["image_location"],
                update_image_source=data["update_image_source"],
            )
        except InputError as exc:
            form_refusal(form, exc)
        else:
            return redirect("dataset-import-job", job_id=job.pk)
    status = 400 if form.errors else 200
    return render(request, "annotation/dataset_import.html", {"form": form}, status=status)


@login_required
def dataset_import_job_page(request: HttpRequest, job_id: int) -> HttpResponse:
    require(request.user, Action.ACT)
    job = get_object_or_404(Job, pk=job_id, name=JOB_NAME)
    busy = job.state in (JobState.PENDING, JobState.RUNNING)
    # The folder the user typed is quoted as typed; any other server path stays hidden.
    given = {k: str(job.params.get(k) or "") for k in ("name", "image_source", "image_location")}
    typed = [given["image_location"]]
    context = {
        "job": job,
        "busy": busy,
        "error": paths_hidden_but(job.result.get("page_error") or job.error, typed=typed),
        "warnings": [paths_hidden_but(str(w), typed=typed) for w in job.result.get("warnings", [])],
        "again": urlencode(given),
        "next_steps": job_next_steps(job),
    }
    return render(request, "annotation/dataset_import_job.html", context)
