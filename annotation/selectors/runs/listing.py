"""The API's lists: what a user may see, filtered and in a stable order for paging.

Every list starts from `visible_runs` (annotation/permissions.py), so a user never pages
through another project's runs, batches, jobs, exports or reviews. Datasets are shared by
every project: anyone allowed to view a run somewhere sees them all.
"""

from __future__ import annotations

from typing import Any

from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce

from annotation.models import (
    Batch,
    Caption,
    Dataset,
    Export,
    Job,
    Project,
    ProjectMembership,
    Review,
    Run,
)
from annotation.permissions import Action, can, visible_projects, visible_runs
from annotation.selectors.reviews.reviews import SORTS


def run_list(
    *,
    user: Any,
    project: int | None = None,
    dataset: int | None = None,
    kind: str | None = None,
    status: str | None = None,
    search: str | None = None,
) -> QuerySet[Run]:
    """The user's runs, newest first; `search` matches the name (any case)."""
    runs = _matching(
        visible_runs(user).select_related("owner"),
        project_id=project,
        dataset_id=dataset,
        kind=kind,
        status=status,
        name__icontains=search,
    )
    return runs.order_by("-created_at", "-pk")


def batch_list(
    *,
    user: Any,
    run: int | None = None,
    stage: str | None = None,
    status: str | None = None,
    provider: str | None = None,
) -> QuerySet[Batch]:
    """The batches of the user's runs, newest first, with their HIT counts."""
    batches = _matching(
        batches_counted().filter(run__in=visible_runs(user)),
        run_id=run,
        stage=stage,
        status=status,
        provider=provider,
    )
    return batches.order_by("-created_at", "-pk")


def batches_counted() -> QuerySet[Batch]:
    """Batches with their number of HITs (`n_hits`), as the API shows them."""
    return Batch.objects.annotate(n_hits=Count("hits"))


def job_list(
    *,
    user: Any,
    run: int | None = None,
    name: str | None = None,
    state: str | None = None,
) -> QuerySet[Job]:
    """The jobs of the user's runs and, for anyone who may view some run, the jobs of no run
    (dataset imports: datasets are shared; encoding jobs of their projects' sets); newest
    first."""
    from annotation.selectors.runs.job_walls import shared_jobs_visible

    shared = shared_jobs_visible(user=user) if can(user, Action.VIEW) else Q(pk__in=[])
    jobs = Job.objects.filter(Q(run__in=visible_runs(user)) | shared)
    return _matching(jobs, run_id=run, name=name, state=state).order_by("-created_at", "-pk")


def dataset_list(*, user: Any, search: str | None = None) -> QuerySet[Dataset]:
    """Every dataset with its image and caption counts, newest first (none for a user who
    may view no run)."""
    if not can(user, Action.VIEW):
        return Dataset.objects.none()
    captions = (
        Caption.objects.filter(dataset=OuterRef("pk"))
        .order_by()
        .values("dataset")
        .annotate(n=Count("pk"))
        .values("n")
    )
    datasets = Dataset.objects.annotate(
        n_images=Count("images"), n_captions=Coalesce(Subquery(captions), 0)
    )
    return _matching(datasets, name__icontains=search).order_by("-created_at", "-pk")


def export_list(*, run: Run, format: str | None = None) -> QuerySet[Export]:
    """A run's export versions, newest first."""
    return _matching(run.exports.all(), format=format).order_by("-created_at", "-pk")


def review_list(
    *,
    user: Any,
    run: int | None = None,
    batch: int | None = None,
    status: str | None = None,
    sort: str = "deadline",
) -> QuerySet[Review]:
    """Reviews of the runs where the user may decide them, in the review queue's orders
    (`sort`: deadline, held or batch)."""
    reviews = Review.objects.filter(
        assignment__hit__batch__run__in=visible_runs(user, Action.REVIEW)
    ).annotate(
        run_id=F("assignment__hit__batch__run_id"),
        batch_id=F("assignment__hit__batch_id"),
        worker_id=F("assignment__worker_id"),
        auto_approve_at=F("assignment__auto_approve_at"),
    )
    reviews = _matching(
        reviews,
        assignment__hit__batch__run_id=run,
        assignment__hit__batch_id=batch,
        status=status,
    )
    return reviews.order_by(*SORTS[sort], "pk")


def project_list(*, user: Any, default: str) -> QuerySet[Project]:
    """The projects the user may see and the default project `default` (everyone may know
    where runs made without a project go), by name, each with the user's `role` (None where
    they are no member, staff included) and whether they may create runs there
    (`may_create_runs`), so a script can choose its project before it makes anything."""
    role = ProjectMembership.objects.filter(project=OuterRef("pk"), user_id=user.pk)
    return (
        Project.objects.filter(Q(pk__in=visible_projects(user)) | Q(name=default))
        .annotate(
            role=Subquery(role.values("role")[:1]),
            is_default=ExpressionWrapper(Q(name=default), output_field=BooleanField()),
            may_create_runs=ExpressionWrapper(
                Q(pk__in=visible_projects(user, Action.ACT)), output_field=BooleanField()
            ),
        )
        .order_by("name", "pk")
    )


def _matching(items: QuerySet, **conditions: Any) -> QuerySet:
    """`items` filtered by the conditions that were given (None or "" means any)."""
    return items.filter(**{k: v for k, v in conditions.items() if v not in (None, "")})
