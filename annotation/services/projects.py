"""Projects and their members: the default project runs fall into, and membership changes."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from annotation.models import Project, ProjectMembership, ProjectRole
from pipeline.errors import InputError

DEFAULT_PROJECT = "Default"


def project_default() -> Project:
    """The project of runs made without one (and of every run older than projects)."""
    project, _ = Project.objects.get_or_create(
        name=DEFAULT_PROJECT,
        defaults={"description": "Runs created without a project, and all runs made before."},
    )
    return project


def _user(username: str) -> AbstractBaseUser:
    users = get_user_model()
    try:
        return users.objects.get(**{users.USERNAME_FIELD: username})
    except users.DoesNotExist:
        raise InputError(f"no user named {username!r}", field="username") from None


def _project(name: str) -> Project:
    try:
        return Project.objects.get(name=name)
    except Project.DoesNotExist:
        raise InputError(f"no project named {name!r}", field="project") from None


def project_member_set(*, project: str, username: str, role: str) -> ProjectMembership:
    """Add a user to a project, or change their role there (one membership per user)."""
    if role not in ProjectRole.values:
        raise InputError(f"must be one of {', '.join(ProjectRole.values)}", field="role")
    membership, _ = ProjectMembership.objects.update_or_create(
        project=_project(project), user=_user(username), defaults={"role": role}
    )
    return membership


def project_member_remove(*, project: str, username: str) -> bool:
    """Remove a user from a project; False if they were not a member."""
    deleted, _ = ProjectMembership.objects.filter(
        project=_project(project), user=_user(username)
    ).delete()
    return bool(deleted)
