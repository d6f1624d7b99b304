"""Projects and their members: the default project runs fall into, new projects, membership
changes, and sign-in accounts made for new members."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import EventAction, Project, ProjectMembership, ProjectRole
from annotation.services.checks import max_length
from annotation.services.events import event_record
from pipeline.errors import InputError

DEFAULT_PROJECT = "Default"


def project_default() -> Project:
    """The project of runs made without one (and of every run older than projects)."""
    project, _ = Project.objects.get_or_create(
        name=DEFAULT_PROJECT,
        defaults={"description": "Runs created without a project, and all runs made before."},
    )
    return project


def _user(username: str) -> User:
    users = get_user_model()
    try:
        return users.objects.get(**{users.USERNAME_FIELD: username})
    except users.DoesNotExist:
        raise InputError(f"no user named {username!r}", field="username") from None


def _project(name: str) -> Project:
    if name == DEFAULT_PROJECT:  # exists from the first run on; a fresh install makes it here
        return project_default()
    try:
        return Project.objects.get(name=name)
    except Project.DoesNotExist:
        raise InputError(f"no project named {name!r}", field="project") from None


def project_member_set(*, project: str, username: str, role: str) -> ProjectMembership:
    """Add a user to a project, or change their role there (one membership per user)."""
    if role not in ProjectRole.values:
        raise InputError(f"must be one of {', '.join(ProjectRole.values)}", field="role")
    with transaction.atomic():
        membership, _ = ProjectMembership.objects.update_or_create(
            project=_project(project), user=_user(username), defaults={"role": role}
        )
        event_record(
            action=EventAction.PROJECT_MEMBER_SET,
            data={"project": membership.project_id, "user": membership.user_id, "role": role},
        )
    return membership


def project_member_remove(*, project: str, username: str) -> bool:
    """Remove a user from a project; False if they were not a member."""
    target, user = _project(project), _user(username)
    with transaction.atomic():
        deleted, _ = ProjectMembership.objects.filter(project=target, user=user).delete()
        if deleted:
            event_record(
                action=EventAction.PROJECT_MEMBER_REMOVED,
                data={"project": target.pk, "user": user.pk},
            )
    return bool(deleted)


def project_create(*, name: str, description: str = "") -> Project:
    """A new project (names are unique; surrounding spaces are dropped)."""
    name = name.strip()
    if not name:
        raise InputError("a project needs a name", field="name")
    limit = max_length(Project, "name")
    if limit is not None and len(name) > limit:
        raise InputError("at most 200 characters", field="name")
    with transaction.atomic():
        if Project.objects.filter(name=name).exists():
            raise InputError(f"a project named {name!r} exists already", field="name")
        project = Project.objects.create(name=name, description=description.strip())
        event_record(action=EventAction.PROJECT_CREATED, data={"project": project.pk, "name": name})
    return project


def account_create(*, username: str) -> tuple[User, str]:
    """A sign-in account with a random password, returned once (only its hash is stored)."""
    users = get_user_model()
    username = username.strip()
    if not username:
        raise InputError("a username is needed", field="username")
    if users.objects.filter(**{users.USERNAME_FIELD: username}).exists():
        raise InputError(f"a user named {username!r} exists already", field="username")
    password = secrets.token_urlsafe(12)
    user = users.objects.create_user(**{users.USERNAME_FIELD: username}, password=password)
    event_record(action=EventAction.ACCOUNT_CREATED, data={"user": user.pk, "username": username})
    return user, password


def project_member_create(
    *, project: str, username: str, role: str
) -> tuple[ProjectMembership, str]:
    """A new user's account and their membership, in one transaction (an unknown project or
    role leaves no account behind); returns the membership and the one-time password."""
    with transaction.atomic():
        _project(project)  # checked before the account is made
        _, password = account_create(username=username)
        return project_member_set(project=project, username=username, role=role), password


def researcher_account_ensure(*, username: str, project: str) -> str:
    """`username` signs in with a new random password (returned once) as a researcher of
    `project`; the account is made if missing. For `make demo`, so its runs open in the
    console."""
    users = get_user_model()
    with transaction.atomic():
        user = users.objects.filter(**{users.USERNAME_FIELD: username}).first()
        if user is None:
            _, password = account_create(username=username)
        else:
            password = secrets.token_urlsafe(12)
            user.set_password(password)
            user.save(update_fields=["password"])
        project_member_set(project=project, username=username, role=ProjectRole.RESEARCHER)
    return password
