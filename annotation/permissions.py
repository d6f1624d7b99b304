"""Who may do what: the one permission check used by pages, the API and downloads.

A user acts on a run through the role they hold in the run's project. Staff (and superusers)
may do everything everywhere, as before projects existed. Without a project or run, `can` asks
whether the user holds a role allowing the action in *any* project: that is what list pages and
forms that pick a project need; the object check follows once the object is known.

Role → actions:
  researcher: view, review, act, download, account_wide
  reviewer:   view, review (the review queue, review decisions, worker pages)
  viewer:     view
  staff only: admin (installation-wide: the kill switch for every run, MTurk reconcile)

Decisions (issue 13):
  * account_wide (blocking a worker, either scope, and notifying workers) touches the worker
    in every project, so it needs the researcher role in the project of the run the worker
    worked in; reviewers may not do it.
  * download (dataset exports, invitation links) is researcher-only: an export is the
    project's result, invitation links let anyone work as the invited worker.

Decisions (issue 47):
  * a platform's worker ids (MTurk worker ids, Prolific and panel participant ids) are shown
    only to roles that contact or pay workers: those with `act` (bonus, pay) in the run's
    project. Viewers and reviewers see the export pseudonym (selectors/pseudonyms.py) instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import QuerySet
from django.http import Http404
from rest_framework.permissions import BasePermission

from annotation.models import Project, ProjectMembership, ProjectRole, Run

if TYPE_CHECKING:  # DRF's views module reads REST_FRAMEWORK, which names this module
    from rest_framework.request import Request
    from rest_framework.views import APIView


class Action(models.TextChoices):
    """The vocabulary of checked actions."""

    # dashboards, run and job status, worker pages, summaries
    VIEW = "view", "view"
    # approve, reject or reverse a review
    REVIEW = "review", "decide reviews"
    # create runs and batches, publish, stop, jobs, exports, invitations, bonus
    ACT = "act", "act on runs"
    # dataset exports and other files leaving the installation
    DOWNLOAD = "download", "download"
    # block or unblock a worker (either scope), notify workers
    ACCOUNT_WIDE = "account_wide", "block or notify workers"
    # installation-wide: staff only
    ADMIN = "admin", "do installation-wide actions"


ROLE_ACTIONS: dict[str, frozenset[str]] = {
    ProjectRole.RESEARCHER: frozenset(
        {Action.VIEW, Action.REVIEW, Action.ACT, Action.DOWNLOAD, Action.ACCOUNT_WIDE}
    ),
    ProjectRole.REVIEWER: frozenset({Action.VIEW, Action.REVIEW}),
    ProjectRole.VIEWER: frozenset({Action.VIEW}),
}


def roles_allowing(action: str) -> list[str]:
    if action not in Action.values:
        raise ValueError(f"unknown action {action!r}")
    return [role for role, actions in ROLE_ACTIONS.items() if action in actions]


def is_staff(user: Any) -> bool:
    return bool(user.is_authenticated and user.is_active and (user.is_staff or user.is_superuser))


def can(user: Any, action: str, *, project: Project | None = None, run: Run | None = None) -> bool:
    """May `user` do `action` on this run (or project); with neither, in any project?"""
    roles = roles_allowing(action)  # an unknown action fails loudly, also for staff
    if not (user.is_authenticated and user.is_active):
        return False
    if is_staff(user):
        return True
    if action == Action.ADMIN:
        return False
    memberships = ProjectMembership.objects.filter(user=user, role__in=roles)
    if run is not None:
        return memberships.filter(project_id=run.project_id).exists()
    if project is not None:
        return memberships.filter(project_id=project.pk).exists()
    return memberships.exists()


def require(
    user: Any, action: str, *, project: Project | None = None, run: Run | None = None
) -> None:
    """`can`, raising PermissionDenied (a 403 on pages and in the API) when refused.

    A signed-in user who may not even view `run` (or, without a run, `project`) gets Http404
    instead (a 404 on pages and in the API), as for an id that does not exist: another
    project's ids are not confirmed to exist. A member whose role lacks the action still gets
    the 403."""
    if not can(user, action, project=project, run=run):
        named = run is not None or project is not None
        if named and user.is_authenticated and not can(user, Action.VIEW, project=project, run=run):
            raise Http404("not found")
        where = f" on run {run.pk}" if run else f" in project {project}" if project else ""
        raise PermissionDenied(f"you may not {Action(action).label.lower()}{where}")


def sees_platform_ids(user: Any, *, run: Run) -> bool:
    """May `user` see a platform's worker ids in `run` (else the worker's pseudonym)?"""
    return can(user, Action.ACT, run=run)


def platform_id_runs(user: Any) -> frozenset[int] | None:
    """The ids of the runs where `user` sees a platform's worker ids (None: every run, staff):
    pages listing several runs' workers name the others by pseudonym."""
    if is_staff(user):
        return None
    return frozenset(visible_runs(user, Action.ACT).values_list("pk", flat=True))


def visible_projects(user: Any, action: str = Action.VIEW) -> QuerySet[Project]:
    """The projects in which `user` may do `action` (all of them for staff)."""
    roles = roles_allowing(action)
    if is_staff(user):
        return Project.objects.all()
    if not (user.is_authenticated and user.is_active) or action == Action.ADMIN:
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user, memberships__role__in=roles).distinct()


def visible_runs(user: Any, action: str = Action.VIEW) -> QuerySet[Run]:
    """The runs in which `user` may do `action`: list pages filter with this."""
    if is_staff(user):
        return Run.objects.all()
    return Run.objects.filter(project__in=visible_projects(user, action))


class ProjectPermission(BasePermission):
    """DRF gate built on `can`: the view's `required_action` in at least one project (staff
    always). The view then calls `require(...)` with the object's run or project."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return can(request.user, getattr(view, "required_action", Action.ADMIN))


class ApiDocsPermission(BasePermission):
    """`/api/schema/` and `/api/docs/`: any signed-in user (session or token), or everyone
    with CROWDVL_PUBLIC_API_DOCS=1; the schema maps every operation for an attacker."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return bool(settings.CROWDVL_PUBLIC_API_DOCS or request.user.is_authenticated)
