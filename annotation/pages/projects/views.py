"""The projects page: staff create projects; staff and a project's researchers add members
(an existing user, or a new account whose random password is shown once) and remove them.
The same services back `manage.py project` and `project_member`."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotation.models import ProjectRole
from annotation.pages.form_errors import form_refusal
from annotation.permissions import Action, can, require, visible_projects
from annotation.services.runs.projects import (
    project_create,
    project_default,
    project_member_create,
    project_member_remove,
    project_member_set,
)
from pipeline.errors import InputError


class ProjectForm(forms.Form):
    name = forms.CharField(
        max_length=200, label="Project name", help_text="unique; runs are filed under it"
    )
    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Description",
        help_text="what the project studies, for its members. Default: none.",
    )


class MemberForm(forms.Form):
    username = forms.CharField(
        max_length=150, label="Username", help_text="an account of this installation"
    )
    role = forms.ChoiceField(
        choices=ProjectRole.choices,
        initial=ProjectRole.RESEARCHER,
        label="Role",
        help_text="what the member may do in this project. Default: researcher.",
    )
    create_account = forms.BooleanField(
        required=False,
        label="Create this account (a random password is shown once)",
        help_text="for someone without an account yet. Default: no.",
    )


@login_required
@require_http_methods(["GET", "POST"])
def projects_page(request: HttpRequest) -> HttpResponse:
    require(request.user, Action.VIEW)
    project_default()  # a fresh install lists the project runs go to by default
    new_project, new_member, password = ProjectForm(prefix="new"), None, None
    target = None
    if request.method == "POST":
        if request.POST.get("what") == "create":
            require(request.user, Action.ADMIN)
            new_project = ProjectForm(request.POST, prefix="new")
            if new_project.is_valid():
                try:
                    created = project_create(**new_project.cleaned_data)
                except InputError as exc:
                    form_refusal(new_project, exc)
                else:
                    messages.success(request, f"Project {created.name} created.")
                    return redirect("projects")
        else:
            target = get_object_or_404(
                visible_projects(request.user), pk=request.POST.get("project")
            )
            require(request.user, Action.ACT, project=target)
            if request.POST.get("what") == "remove":
                project_member_remove(
                    project=target.name, username=request.POST.get("username", "")
                )
                messages.success(request, f"{request.POST.get('username')} removed from {target}.")
                return redirect("projects")
            new_member = MemberForm(request.POST, prefix=f"p{target.pk}")
            if new_member.is_valid():
                who = {
                    "project": target.name,
                    "username": new_member.cleaned_data["username"],
                    "role": new_member.cleaned_data["role"],
                }
                try:
                    if new_member.cleaned_data["create_account"]:
                        _, password = project_member_create(**who)
                    else:
                        project_member_set(**who)
                except InputError as exc:
                    form_refusal(new_member, exc)
                else:
                    if password is None:
                        messages.success(
                            request, f"{who['username']} is {who['role']} of {target}."
                        )
                        return redirect("projects")
                    new_member = None  # stays on this page: the password is shown once, here
    rows = []
    for project in visible_projects(request.user).order_by("name"):
        manage = can(request.user, Action.ACT, project=project)
        refused = new_member if target is not None and target.pk == project.pk else None
        rows.append(
            {
                "project": project,
                "members": project.memberships.select_related("user").order_by("user__username"),
                "form": (refused or MemberForm(prefix=f"p{project.pk}")) if manage else None,
            }
        )
    context = {
        "rows": rows,
        "new_project": new_project if can(request.user, Action.ADMIN) else None,
        "password": password,
        "password_user": request.POST.get(f"p{target.pk}-username") if target else None,
    }
    failed = (new_member is not None and new_member.errors) or new_project.errors
    return render(request, "annotation/projects.html", context, status=400 if failed else 200)
