"""Users, projects and roles (issue 13): each role's allowed and refused actions through the
one permission check, on pages (test client) and the API (APIClient), list pages showing a
member only their projects' runs, jobs and reviews, and the data migration that puts older
runs in the Default project."""

import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.test import APIClient

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import (
    Batch,
    BatchStatus,
    Hit,
    Job,
    JobState,
    Project,
    ProjectMembership,
    ProjectRole,
    Review,
    ReviewStatus,
    Run,
    Worker,
)
from annotation.permissions import Action, can, require, visible_projects, visible_runs
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.projects import DEFAULT_PROJECT, project_default
from annotation.services.runs.runs import run_create
from pipeline.simulate import WorkerProfile

pytestmark = pytest.mark.django_db

ROLES = {
    "alice": ProjectRole.RESEARCHER,
    "rita": ProjectRole.REVIEWER,
    "vic": ProjectRole.VIEWER,
    "nobody": None,
}
ALLOWED = {
    "alice": {Action.VIEW, Action.REVIEW, Action.ACT, Action.DOWNLOAD, Action.ACCOUNT_WIDE},
    "rita": {Action.VIEW, Action.REVIEW},
    "vic": {Action.VIEW},
    "nobody": set(),
    "staff": set(Action.values),
}


@pytest.fixture
def world(proposed, dataset, django_user_model):
    """Project A with a run whose reviews are held, project B with another such run (the
    ECCV run, its batch and HITs split between the two), a running job in each, and a user
    per role in A only."""
    a = Project.objects.create(name="Alpha")
    b = Project.objects.create(name="Beta")
    run_b = proposed
    Run.objects.filter(pk=run_b.pk).update(project=b)
    run_b.refresh_from_db()
    batch_b = batch_publish(
        batch=batch_create(
            run=run_b, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(
        batch=batch_b, workers=3, profile=WorkerProfile(accuracy=1.0, gold_accuracy=0.0), seed=3
    )
    run_a = run_create(dataset=dataset, kind="bison", name="alpha run", project=a)
    batch_a = Batch.objects.get(pk=batch_b.pk)
    batch_a.pk = None
    batch_a.run = run_a
    batch_a.save()
    held = list(Review.objects.filter(status=ReviewStatus.OPEN).order_by("pk"))
    assert len(held) >= 2, "gold accuracy 0 must hold several HITs"
    # Half of the held HITs move to project A's batch: each project has its own reviews.
    moved = {r.assignment.hit_id for r in held[: len(held) // 2]}
    Hit.objects.filter(pk__in=moved).update(batch=batch_a)
    users = {"staff": django_user_model.objects.create_user("staff", password="pw", is_staff=True)}
    for name, role in ROLES.items():
        users[name] = django_user_model.objects.create_user(name, password="pw")
        if role:
            ProjectMembership.objects.create(project=a, user=users[name], role=role)
    return {
        "a": a,
        "b": b,
        "run_a": run_a,
        "run_b": run_b,
        "batch_a": batch_a,
        "reviews_a": [r for r in held if r.assignment.hit_id in moved],
        "reviews_b": [r for r in held if r.assignment.hit_id not in moved],
        "job_a": Job.objects.create(name="bison.pairing", run=run_a, state=JobState.RUNNING),
        "job_b": Job.objects.create(name="eccv.propose", run=run_b, state=JobState.RUNNING),
        "users": users,
    }


def login(client, world, name):
    client.force_login(world["users"][name])
    return client


@pytest.mark.parametrize("name", [*ROLES, "staff"])
def test_each_role_may_do_its_actions_in_its_project_only(world, name):
    user = world["users"][name]
    for action in Action.values:
        expected = action in ALLOWED[name]
        assert can(user, action, run=world["run_a"]) == expected, action
        assert can(user, action, project=world["a"]) == expected, action
        # Project B: only staff.
        assert can(user, action, run=world["run_b"]) == (name == "staff"), action
    if name != "staff":
        assert not can(user, Action.ADMIN)
        with pytest.raises(Exception, match="may not"):
            require(user, Action.ADMIN)


def test_anonymous_and_inactive_users_may_do_nothing(world):
    from django.contrib.auth.models import AnonymousUser

    alice = world["users"]["alice"]
    alice.is_active = False
    for user in (AnonymousUser(), alice):
        assert not any(can(user, action, run=world["run_a"]) for action in Action.values)
        assert not visible_runs(user).exists()
    with pytest.raises(ValueError, match="unknown action"):
        can(world["users"]["staff"], "launch")


def test_visible_projects_and_runs(world):
    for name in ROLES:
        user = world["users"][name]
        runs = set(visible_runs(user))
        assert runs == ({world["run_a"]} if ROLES[name] else set())
        assert world["run_b"] not in runs
    rita = world["users"]["rita"]
    assert list(visible_projects(rita, Action.REVIEW)) == [world["a"]]
    assert not visible_projects(rita, Action.ACT).exists()
    assert {world["run_a"], world["run_b"]} <= set(visible_runs(world["users"]["staff"]))


# Pages -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["alice", "rita", "vic"])
def test_dashboard_lists_only_the_members_runs_and_jobs(world, client, name):
    page = login(client, world, name).get("/").content.decode()
    assert f'id="run-{world["run_a"].pk}"' in page and "Alpha" in page
    assert f'id="run-{world["run_b"].pk}"' not in page
    assert f"#{world['job_b'].pk} " not in page
    assert ("stop-run" in page) == (name == "alice")  # only researchers get the buttons
    assert "stop-all" not in page  # the installation's kill switch: staff only


def test_dashboard_refuses_non_members_and_shows_staff_everything(world, client):
    assert login(client, world, "nobody").get("/").status_code == 403
    page = login(client, world, "staff").get("/").content.decode()
    assert f'id="run-{world["run_a"].pk}"' in page and f'id="run-{world["run_b"].pk}"' in page
    assert "stop-all" in page
    client.logout()
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_review_queue_lists_and_decides_only_the_projects_reviews(world, client):
    a, b = world["reviews_a"], world["reviews_b"]
    page = login(client, world, "vic").get("/review/").content.decode()
    assert all(f"/review/{r.pk}/" in page for r in a)
    assert not any(f"/review/{r.pk}/" in page for r in b)
    # A viewer may look but not decide.
    assert client.post("/review/", {"review": [a[0].pk], "decision": "approve"}).status_code == 403
    assert client.post(f"/review/{a[0].pk}/", {"decision": "approve"}).status_code == 403
    assert 'id="approve"' not in client.get(f"/review/{a[0].pk}/").content.decode()
    assert 'id="bulk-approve"' not in page
    assert client.get(f"/review/{b[0].pk}/").status_code == 404  # another project's: hidden
    # A reviewer decides A's reviews; B's, ticked with them, are refused one by one.
    login(client, world, "rita")
    assert 'id="bulk-approve"' in client.get("/review/").content.decode()
    assert 'id="approve"' in client.get(f"/review/{a[0].pk}/").content.decode()
    response = client.post(
        "/review/", {"review": [a[0].pk, b[0].pk], "decision": "approve"}, follow=True
    )
    assert f"Review {b[0].pk}: you may not decide it" in response.content.decode()
    assert Review.objects.get(pk=a[0].pk).status == ReviewStatus.APPROVED
    assert Review.objects.get(pk=b[0].pk).status == ReviewStatus.OPEN
    assert client.post(f"/review/{b[0].pk}/", {"decision": "approve"}).status_code == 404
    assert Review.objects.get(pk=b[0].pk).status == ReviewStatus.OPEN
    # Staff decide anything, as before.
    login(client, world, "staff").post(f"/review/{b[0].pk}/", {"decision": "approve"})
    assert Review.objects.get(pk=b[0].pk).status == ReviewStatus.APPROVED


def test_stop_and_jobs_are_for_researchers_of_the_run(world, client):
    run_a, run_b, batch_a = world["run_a"], world["run_b"], world["batch_a"]
    stop = {"confirm": "STOP", "reason": "test"}
    for name in ("rita", "vic", "nobody"):
        login(client, world, name)
        refused = 404 if name == "nobody" else 403  # members see the run; nobody does not
        assert client.post("/stop/", {**stop, "run": run_a.pk}).status_code == refused
        assert client.post(f"/jobs/{world['job_a'].pk}/cancel/").status_code == refused
    login(client, world, "alice")
    assert client.post("/stop/", {**stop, "run": run_b.pk}).status_code == 404
    assert client.post("/stop/", stop).status_code == 403  # every run: staff only
    assert client.post(f"/jobs/{world['job_b'].pk}/cancel/").status_code == 404
    assert Job.objects.get(pk=world["job_b"].pk).state == JobState.RUNNING
    assert client.post(f"/jobs/{world['job_a'].pk}/cancel/").status_code == 302
    assert Job.objects.get(pk=world["job_a"].pk).state == JobState.CANCELLED
    assert client.post("/stop/", {**stop, "run": run_a.pk}).status_code == 302
    batch_a.refresh_from_db()
    assert batch_a.status == BatchStatus.EXPIRED
    assert Batch.objects.filter(run=run_b).exclude(status=BatchStatus.EXPIRED).exists()


def test_invitations_and_their_links_are_researcher_only(world, client):
    run_a = world["run_a"]
    for name in ("rita", "vic", "nobody"):
        login(client, world, name)
        refused = 404 if name == "nobody" else 403  # members see the run; nobody does not
        assert client.get(f"/runs/{run_a.pk}/invitations/").status_code == refused
        assert client.get(f"/runs/{run_a.pk}/invitations.csv").status_code == refused
    login(client, world, "alice")
    assert client.get(f"/runs/{run_a.pk}/invitations/").status_code == 200
    assert client.get(f"/runs/{run_a.pk}/invitations.csv").status_code == 200
    assert client.get(f"/runs/{world['run_b'].pk}/invitations.csv").status_code == 404


def test_worker_pages_reviewers_look_researchers_block_and_notify(world, client):
    run_b = world["run_b"]
    worker = Worker.objects.filter(assignments__hit__batch__run=run_b).first()
    Run.objects.filter(pk=run_b.pk).update(project=world["a"])  # its workers, in project A
    base = f"/runs/{run_b.pk}/workers/"
    block = {"scope": "project", "reason": "gold failures"}
    notify = {"worker": [worker.pk], "subject": "s", "message": "m"}
    for name in ("rita", "vic"):
        page = login(client, world, name).get(base).content.decode()
        assert "Notify</button>" not in page and "Block</button>" not in page
        assert "Pay bonus" not in page
        assert client.post(f"{base}{worker.pk}/block/", block).status_code == 403
        assert client.post(f"{base}notify/", notify).status_code == 403
        assert client.post(f"{base}{worker.pk}/bonus/", {"amount": "1"}).status_code == 403
    assert login(client, world, "nobody").get(base).status_code == 404
    assert not Worker.objects.get(pk=worker.pk).blocked
    page = login(client, world, "alice").get(base).content.decode()
    assert "Notify</button>" in page and "Block</button>" in page and "Pay bonus" in page
    assert client.post(f"{base}{worker.pk}/block/", block).status_code == 302
    assert Worker.objects.get(pk=worker.pk).blocked
    # Back in project B, the same worker is out of alice's reach.
    Run.objects.filter(pk=run_b.pk).update(project=world["b"])
    assert client.post(f"{base}{worker.pk}/unblock/", {"reason": "x"}).status_code == 404
    assert client.get(base).status_code == 404
    assert Worker.objects.get(pk=worker.pk).blocked


def test_console_pages_by_role(world, client, dataset):
    for name, allowed in {"alice": True, "rita": False, "vic": False}.items():
        login(client, world, name)
        assert client.get("/datasets/").status_code == 200
        assert client.get("/datasets/import/").status_code == (200 if allowed else 403)
        assert client.get("/runs/new/bison/").status_code == (200 if allowed else 403)
        assert client.get("/mturk/reconcile/").status_code == 403  # account listing: staff
        image = dataset.images.first()
        assert client.get(f"/staff/images/{image.pk}/").status_code != 403
    assert login(client, world, "nobody").get("/datasets/").status_code == 403
    assert client.get(f"/staff/images/{dataset.images.first().pk}/").status_code == 403
    assert login(client, world, "staff").get("/mturk/reconcile/").status_code == 200


def test_run_form_offers_only_the_researchers_projects(world, client, dataset):
    import html
    import re

    login(client, world, "alice")
    page = client.get("/runs/new/bison/").content.decode()
    assert "Alpha" in page and "Beta" not in page
    form = {"dataset": dataset.pk, "name": "from the form", "project": world["b"].pk}
    for key, value in re.findall(r'<input[^>]*name="(config_\w+)"[^>]*value="([^"]*)"', page):
        form[key] = html.unescape(value)
    assert client.post("/runs/new/bison/", form).status_code == 400  # not a choice for her
    assert not Run.objects.filter(name="from the form").exists()
    form["project"] = world["a"].pk
    response = client.post("/runs/new/bison/", form)
    assert response.status_code == 302, response.context["form"].errors
    assert Run.objects.get(name="from the form").project == world["a"]


# API ---------------------------------------------------------------------------------------


def api(world, name):
    client = APIClient()
    client.force_authenticate(world["users"][name])
    return client


def post(client, url, body=None):
    return client.post(url, json.dumps(body or {}), content_type="application/json")


def test_api_run_creation_needs_a_researcher_of_the_chosen_project(world, dataset):
    alice = api(world, "alice")
    response = post(alice, "/api/runs/", {"dataset": dataset.pk, "project": world["a"].pk})
    assert response.status_code == 201, response.content
    assert response.json()["project"] == world["a"].pk
    assert (
        post(alice, "/api/runs/", {"dataset": dataset.pk, "project": world["b"].pk}).status_code
        == 404  # not her project: as an unknown id (issue 25)
    )
    # No project: the Default project, where alice is no one.
    assert post(alice, "/api/runs/", {"dataset": dataset.pk}).status_code == 403
    for name in ("rita", "vic", "nobody"):
        body = {"dataset": dataset.pk, "project": world["a"].pk}
        assert post(api(world, name), "/api/runs/", body).status_code == 403
    response = post(api(world, "staff"), "/api/runs/", {"dataset": dataset.pk})
    assert response.status_code == 201
    assert Run.objects.get(pk=response.json()["id"]).project.name == DEFAULT_PROJECT


def test_api_reads_and_acts_by_role_and_project(world):
    job_a, job_b, run_a = world["job_a"], world["job_b"], world["run_a"]
    for name in ("vic", "rita"):
        client = api(world, name)
        assert client.get(f"/api/jobs/{job_a.pk}/").status_code == 200
        assert client.get(f"/api/jobs/{job_b.pk}/").status_code == 404  # another project's
        assert client.get(f"/api/runs/{run_a.pk}/summary/").status_code == 200
        assert post(client, f"/api/jobs/{job_a.pk}/cancel/").status_code == 403
        assert post(client, f"/api/runs/{run_a.pk}/exports/").status_code == 403
        body = {"stage": BisonStage.SELECTION, "provider": "simulated"}
        assert post(client, f"/api/runs/{run_a.pk}/batches/", body).status_code == 403
    nobody = api(world, "nobody")
    assert nobody.get(f"/api/jobs/{job_a.pk}/").status_code == 403
    alice = api(world, "alice")
    assert post(alice, f"/api/jobs/{job_b.pk}/cancel/").status_code == 404
    assert post(alice, f"/api/runs/{world['run_b'].pk}/pairing/").status_code == 404
    assert alice.get(f"/api/runs/{world['run_b'].pk}/summary/").status_code == 404
    assert post(alice, f"/api/jobs/{job_a.pk}/cancel/").status_code == 200
    assert Job.objects.get(pk=job_a.pk).state == JobState.CANCELLED
    assert Job.objects.get(pk=job_b.pk).state == JobState.RUNNING
    assert api(world, "staff").get(f"/api/jobs/{job_b.pk}/").status_code == 200


# Default project, migration, command ------------------------------------------------------


def test_runs_without_a_project_go_to_the_default_project(dataset):
    assert not Project.objects.exists()
    run = run_create(dataset=dataset)
    assert run.project.name == DEFAULT_PROJECT
    assert run.project == project_default()
    assert Project.objects.count() == 1


def test_a_model_default_writes_no_project(dataset):
    """Issue 26: no model default writes rows; only the service picks the Default project."""
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        Run.objects.create(dataset=dataset, kind="bison")
    assert not Project.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_migration_puts_existing_runs_in_the_default_project(tmp_path, image_dir):
    executor = MigrationExecutor(connection)
    before, after = [("annotation", "0014_job_heartbeat")], [("annotation", "0015_projects")]
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        dataset = old.get_model("annotation", "Dataset").objects.create(
            name="old", source_file="x.json", checksum="0" * 64, image_source="coco_url"
        )
        old_run = old.get_model("annotation", "Run")
        ids = [old_run.objects.create(dataset=dataset, kind="bison").pk for _ in range(2)]
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps
        runs = new.get_model("annotation", "Run").objects.filter(pk__in=ids)
        assert {r.project.name for r in runs} == {DEFAULT_PROJECT}
        assert new.get_model("annotation", "Project").objects.count() == 1
    finally:
        MigrationExecutor(connection).migrate(
            MigrationExecutor(connection).loader.graph.leaf_nodes()
        )


def test_project_member_command(world):
    out = io.StringIO()
    call_command("project_member", "add", "Beta", "vic", "reviewer", stdout=out)
    assert can(world["users"]["vic"], Action.REVIEW, run=world["run_b"])
    call_command("project_member", "add", "Beta", "vic", "viewer", stdout=out)
    assert not can(world["users"]["vic"], Action.REVIEW, run=world["run_b"])
    call_command("project_member", "list", "Beta", stdout=out)
    assert "Beta\tvic\tviewer" in out.getvalue()
    call_command("project_member", "remove", "Beta", "vic", stdout=out)
    assert not can(world["users"]["vic"], Action.VIEW, run=world["run_b"])
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="no user named"):
        call_command("project_member", "add", "Beta", "ghost", "viewer")
    with pytest.raises(CommandError, match="no project named"):
        call_command("project_member", "add", "Gamma", "vic", "viewer")


def test_other_projects_ids_answer_as_unknown_ids_but_members_get_403(world, client):
    """Issue 25: for a signed-in user, a run they may not see (and its batches, jobs, reviews)
    answers exactly as an id that does not exist: 404 with the same body, on pages and in the
    API. A member whose role lacks the action is still refused with 403."""
    run_b, job_b, review_b = world["run_b"], world["job_b"], world["reviews_b"][0]
    batch_b = Batch.objects.filter(run=run_b).first()
    unknown = 10**9
    pages = [
        ("get", "/runs/{}/", run_b.pk),
        ("get", "/runs/{}/status.json", run_b.pk),
        ("get", "/runs/{}/workers/", run_b.pk),
        ("get", "/runs/{}/exports/", run_b.pk),
        ("get", "/batches/{}/", batch_b.pk),
        ("get", "/review/{}/", review_b.pk),
        ("post", "/review/{}/", review_b.pk),
        ("post", "/jobs/{}/cancel/", job_b.pk),
    ]
    login(client, world, "alice")
    for method, url, pk in pages:
        hidden = getattr(client, method)(url.format(pk), {"decision": "approve"})
        missing = getattr(client, method)(url.format(unknown), {"decision": "approve"})
        assert hidden.status_code == missing.status_code == 404, url
        assert hidden.content == missing.content, url
    calls = [
        ("get", "/api/runs/{}/", run_b.pk),
        ("get", "/api/runs/{}/summary/", run_b.pk),
        ("get", "/api/runs/{}/batches/", run_b.pk),
        ("get", "/api/batches/{}/", batch_b.pk),
        ("get", "/api/jobs/{}/", job_b.pk),
        ("post", "/api/batches/{}/expire/", batch_b.pk),
        ("post", "/api/jobs/{}/cancel/", job_b.pk),
        ("post", "/api/reviews/{}/reverse/", review_b.pk),
    ]
    alice = api(world, "alice")
    for method, url, pk in calls:
        body = {"feedback": "x"}
        hidden = getattr(alice, method)(url.format(pk), body, format="json")
        missing = getattr(alice, method)(url.format(unknown), body, format="json")
        assert hidden.status_code == missing.status_code == 404, url
        assert hidden.json() == missing.json() == {"error": "not found", "detail": "not found"}
    assert Batch.objects.get(pk=batch_b.pk).status == batch_b.status
    assert Job.objects.get(pk=job_b.pk).state == JobState.RUNNING
    # A member of the run's project whose role lacks the action: 403, as before.
    vic = api(world, "vic")
    assert post(vic, f"/api/jobs/{world['job_a'].pk}/cancel/").status_code == 403
    assert post(vic, f"/api/batches/{world['batch_a'].pk}/expire/").status_code == 403
    page = login(client, world, "vic").post(f"/review/{world['reviews_a'][0].pk}/")
    assert page.status_code == 403


@pytest.mark.parametrize("name", ["alice", "rita", "vic", "staff"])
def test_only_roles_that_pay_or_contact_workers_see_a_platforms_worker_ids(world, client, name):
    """Audit issue 47: viewers saw Prolific and panel participant ids on the workers page and
    in `GET /api/runs/<id>/workers/`. Reviewers and viewers now see the export pseudonym."""
    from annotation.selectors.pseudonyms import worker_pseudonym

    run = world["run_a"]
    workers = Worker.objects.filter(assignments__hit__batch__run=run).distinct()
    assert workers.exists()
    plain = name in ("alice", "staff")
    login(client, world, name)
    api = APIClient()
    api.force_authenticate(world["users"][name])
    rows = api.get(f"/api/runs/{run.pk}/workers/").json()["results"]
    assert {r["id"] for r in rows} == {w.pk for w in workers}
    for row in rows:
        worker = workers.get(pk=row["id"])
        pseudonym = worker_pseudonym(provider=worker.provider, external_id=worker.external_id)
        assert row["external_id"] == (worker.external_id if plain else None)
        assert row["shown_as"] == (worker.external_id if plain else pseudonym)
    review = world["reviews_a"][0]
    pages = {
        "workers": client.get(f"/runs/{run.pk}/workers/").content.decode(),
        "queue": client.get("/review/").content.decode(),
        "review": client.get(f"/review/{review.pk}/").content.decode(),
    }
    reviewed = review.assignment.worker
    assert (
        worker_pseudonym(provider=reviewed.provider, external_id=reviewed.external_id)
        in pages["review"]
        or plain
    )
    for page, body in pages.items():
        shown = [w.external_id for w in workers if w.external_id in body]
        assert bool(shown) == plain, (page, shown)
