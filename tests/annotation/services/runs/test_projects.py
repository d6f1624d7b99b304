"""A lab's first steps on a fresh install: projects and members from the CLI and the console
(new accounts with a one-time password), the empty dashboard's way in, and sign-out."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import Event, Project, ProjectMembership
from annotation.services.runs.projects import (
    DEFAULT_PROJECT,
    project_create,
    project_member_set,
    researcher_account_ensure,
)

pytestmark = pytest.mark.django_db


def command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_members_of_the_default_project_on_a_fresh_install_from_the_command_line(client):
    assert not Project.objects.exists()  # a new database: no run has made the Default project
    out = command(
        "project_member", "add", DEFAULT_PROJECT, "alice", "researcher", "--create-account"
    )
    password = re.search(r"with password (\S+)", out).group(1)
    assert client.login(username="alice", password=password)
    membership = ProjectMembership.objects.get(user__username="alice")
    assert (membership.project.name, membership.role) == (DEFAULT_PROJECT, "researcher")
    assert client.get("/").status_code == 200  # a member of a project opens the console
    assert Event.objects.filter(action="account.created").count() == 1


def test_projects_are_created_and_listed_from_the_command_line():
    assert "created project Lab" in command("project", "create", "Lab", "--description", "eyes")
    listed = command("project", "list")
    assert "Lab\t0 run(s)\t0 member(s)" in listed and DEFAULT_PROJECT in listed
    with pytest.raises(CommandError, match="exists already"):
        command("project", "create", " Lab ")
    with pytest.raises(CommandError, match="needs a name"):
        command("project", "create", "  ")


def test_an_unknown_project_leaves_no_account_behind():
    with pytest.raises(CommandError, match="no project named 'Nope'"):
        command("project_member", "add", "Nope", "bob", "viewer", "--create-account")
    assert not get_user_model().objects.filter(username="bob").exists()


def test_staff_create_a_project_and_a_member_account_in_the_console(admin_client, client):
    page = admin_client.get("/projects/")
    assert page.status_code == 200 and DEFAULT_PROJECT.encode() in page.content
    created = admin_client.post("/projects/", {"what": "create", "new-name": "Vision lab"})
    assert created.status_code == 302
    project = Project.objects.get(name="Vision lab")
    prefix = f"p{project.pk}"
    response = admin_client.post(
        "/projects/",
        {
            "what": "member",
            "project": project.pk,
            f"{prefix}-username": "rosa",
            f"{prefix}-role": "researcher",
            f"{prefix}-create_account": "on",
        },
    )
    assert response.status_code == 200
    password = re.search(rb"shown only this once: <code>([^<]+)</code>", response.content).group(1)
    assert client.login(username="rosa", password=password.decode())
    # A researcher of the project adds an existing user; the form names a wrong field.
    get_user_model().objects.create_user(username="vic", password="x" * 12)
    response = client.post(
        "/projects/",
        {
            "what": "member",
            "project": project.pk,
            f"{prefix}-username": "vic",
            f"{prefix}-role": "viewer",
        },
    )
    assert response.status_code == 302
    assert ProjectMembership.objects.get(user__username="vic").role == "viewer"
    refused = client.post(
        "/projects/",
        {
            "what": "member",
            "project": project.pk,
            f"{prefix}-username": "nobody",
            f"{prefix}-role": "viewer",
        },
    )
    assert refused.status_code == 400 and b"no user named" in refused.content
    # A researcher may not create projects; another project's id is unknown to them.
    assert client.post("/projects/", {"what": "create", "new-name": "Mine"}).status_code == 403
    other = project_create(name="Elsewhere")
    forged = {
        "what": "member",
        "project": other.pk,
        f"p{other.pk}-username": "vic",
        f"p{other.pk}-role": "viewer",
    }
    assert client.post("/projects/", forged).status_code == 404
    # A viewer sees the project's members but cannot change them.
    client.logout()
    get_user_model().objects.filter(username="vic").update(password="")
    vic = get_user_model().objects.get(username="vic")
    vic.set_password("y" * 12)
    vic.save()
    assert client.login(username="vic", password="y" * 12)
    page = client.get("/projects/")
    assert b"rosa" in page.content and b"Add member" not in page.content
    remove = {"what": "remove", "project": project.pk, "username": "rosa"}
    assert client.post("/projects/", remove).status_code == 403
    assert ProjectMembership.objects.filter(user__username="rosa").exists()


def test_the_empty_dashboard_leads_to_import_and_new_run_and_pages_sign_out(admin_client):
    page = admin_client.get("/").content.decode()
    assert 'href="/datasets/import/"' in page and 'href="/runs/new/"' in page
    assert "manage.py import_coco" not in page
    assert 'id="sign-out"' in page and 'action="/accounts/logout/"' in page
    assert admin_client.post("/accounts/logout/").status_code == 302
    assert admin_client.get("/").status_code == 302  # signed out: to the sign-in page


def test_the_demo_account_gets_a_new_password_each_time(client):
    first = researcher_account_ensure(username="demo", project=DEFAULT_PROJECT)
    second = researcher_account_ensure(username="demo", project=DEFAULT_PROJECT)
    assert first != second
    assert not client.login(username="demo", password=first)
    assert client.login(username="demo", password=second)
    assert ProjectMembership.objects.get(user__username="demo").role == "researcher"
    project_member_set(project=DEFAULT_PROJECT, username="demo", role="viewer")
    researcher_account_ensure(username="demo", project=DEFAULT_PROJECT)
    assert ProjectMembership.objects.get(user__username="demo").role == "researcher"


def test_every_page_of_a_run_links_back_to_it(paired_run, admin_client):
    from annotation.crowd.simulated.crowd import simulate_crowd
    from annotation.models import Review
    from annotation.services.runs.batches import batch_create, batch_publish
    from pipeline.simulate import WorkerProfile

    batch = batch_publish(
        batch=batch_create(run=paired_run, stage="bison_selection", provider="simulated")
    )
    simulate_crowd(batch=batch, workers=1, profile=WorkerProfile())
    review = Review.objects.create(assignment=batch.hits.first().assignments.first(), reasons=[])
    back = f'href="/runs/{paired_run.pk}/"'
    for url in (
        f"/runs/{paired_run.pk}/batches/new/",
        f"/batches/{batch.pk}/",
        f"/runs/{paired_run.pk}/exports/",
        f"/runs/{paired_run.pk}/workers/",
        f"/runs/{paired_run.pk}/invitations/",
        f"/review/{review.pk}/",
    ):
        page = admin_client.get(url)
        assert page.status_code == 200 and back in page.content.decode(), url
