"""Where a finished job leads: the links its page (and the exports page) offers next, by what
the job made (an imported dataset, an export version, a release bundle) instead of asking
the reader to reload and look for it."""

from __future__ import annotations

from django.urls import reverse

from annotation.models import Export, Job, JobState
from annotation.selectors.release.exports import (
    BUNDLE_JOB,
    DATASHEET,
    export_bundle,
    export_file_named,
)
from annotation.services.datasets.dataset_jobs import JOB_NAME as IMPORT_JOB
from annotation.services.release.export_specs import export_job_names


def job_next_steps(
    job: Job, *, run_link: bool = True, downloads: bool = True
) -> list[tuple[str, str]]:
    """(label, URL) pairs, most useful first; none while the job has not succeeded, except the
    way back to its run (`run_link`). Without `downloads` (a viewer), no link to an export's
    files: only the pages the user may open."""
    steps: list[tuple[str, str]] = []
    if job.state == JobState.SUCCEEDED:
        if job.name == IMPORT_JOB and job.result.get("dataset"):
            steps += _dataset_steps(job)
        elif job.name in export_job_names() | {BUNDLE_JOB}:
            steps += _export_steps(job, downloads=downloads)
    if job.run_id and run_link:
        steps.append((f"Run {job.run_id}'s page", reverse("run-page", args=[job.run_id])))
    return steps


def _dataset_steps(job: Job) -> list[tuple[str, str]]:
    dataset, name = job.result["dataset"], job.result.get("name", "")
    return [
        (f"Start a run on {name}", f"{reverse('run-new')}?dataset={dataset}"),
        ("Encode its images with a model", reverse("dataset-embeddings", args=[dataset])),
        ("All datasets", reverse("datasets")),
    ]


def _export_steps(job: Job, *, downloads: bool) -> list[tuple[str, str]]:
    export_id = job.result.get("export") or job.params.get("export")
    export = Export.objects.filter(pk=export_id).first()
    if export is None:
        return []
    version = f"{reverse('run-exports', args=[export.run_id])}#export-{export.pk}"
    steps = [(f"{export.format} v{export.version} on the exports page", version)]
    if not downloads:
        return steps
    bundle = export_bundle(export) if job.name == BUNDLE_JOB else None
    if bundle is not None:
        steps.append((f"Download {bundle.name}", reverse("export-bundle", args=[export.pk])))
    else:
        steps.append((f"Download its files (v{export.version})", f"{version}-files"))
    if export_file_named(export, DATASHEET):
        path = reverse("export-file-path", args=[export.pk, DATASHEET])
        steps.append(("Read its datasheet", f"{path}?view=1"))
    return steps
