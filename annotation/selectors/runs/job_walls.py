"""Which project a job belongs to, for the project wall (issue 47): a run's job is its run's
project's; an encoding job is its embedding set's project's; other jobs of no run (dataset
imports: datasets are shared) belong to no project."""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from annotation.encoders.models import EmbeddingSet
from annotation.encoders.services import JOB_NAME as ENCODE_JOB
from annotation.models import Job, Project
from annotation.permissions import require, visible_projects


def job_project(*, job: Job) -> Project | None:
    """The project whose members may see and act on `job`; None for a shared job."""
    if job.run is not None:
        return job.run.project
    if job.name == ENCODE_JOB:
        found = EmbeddingSet.objects.filter(pk=job.params.get("set")).select_related("project")
        embedding_set = found.first()
        # A job whose set is gone: staff's only (the Default project's members at most).
        if embedding_set is None:
            from annotation.services.runs.projects import project_default

            return project_default()
        return embedding_set.project
    return None


def job_require(*, user: Any, job: Job, action: str) -> None:
    """`require` on the job's run or project: another project's job answers 404."""
    if job.run is not None:
        require(user, action, run=job.run)
    else:
        require(user, action, project=job_project(job=job))


def shared_jobs_visible(*, user: Any) -> Q:
    """The jobs of no run that `user` may list: dataset imports, and the encoding jobs of
    their projects' sets."""
    sets = EmbeddingSet.objects.filter(project__in=visible_projects(user)).values_list(
        "pk", flat=True
    )
    return Q(run__isnull=True) & (~Q(name=ENCODE_JOB) | Q(params__set__in=list(sets)))
