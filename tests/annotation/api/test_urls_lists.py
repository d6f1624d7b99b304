"""The API's lists and the console's actions (issue 13): pages and filters within what the
user may see, each response checked against the schema; batch actions, a run's jobs, exports
with downloads, bulk review decisions, through the same services and permission check as the
pages."""

import pytest
from rest_framework.test import APIClient

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    Batch,
    BatchStatus,
    Dataset,
    HitStatus,
    Job,
    JobState,
    ProjectMembership,
    ProjectRole,
    Review,
    ReviewStatus,
    Run,
)
from annotation.selectors.release.exports import export_file_named
from annotation.services.runs.batches import batch_create
from annotation.services.runs.runs import run_create
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.pages.exports.test_views import exported  # noqa: F401
from tests.annotation.test_permissions import world  # noqa: F401

pytestmark = pytest.mark.django_db


def as_user(world, name):  # noqa: F811
    client = APIClient()
    client.force_authenticate(world["users"][name])
    return client


def test_runs_are_paged_and_filtered_within_the_users_projects(world, schema, dataset):  # noqa: F811
    for i in range(3):
        run_create(dataset=dataset, kind="bison", name=f"extra {i}", project=world["a"])
    alice = as_user(world, "alice")
    response = alice.get("/api/runs/", {"limit": 2})
    assert response.status_code == 200
    check(schema, "/api/runs/", "get", response)
    body = response.json()
    # Project A's four runs only (not B's ECCV run), newest first, two per page.
    mine = list(Run.objects.filter(project=world["a"]).order_by("-created_at", "-pk"))
    assert body["count"] == 4 and [r["id"] for r in body["results"]] == [r.pk for r in mine[:2]]
    assert "offset=2" in body["next"] and body["previous"] is None
    rest = alice.get("/api/runs/", {"limit": 2, "offset": 2}).json()
    assert [r["id"] for r in rest["results"]] == [r.pk for r in mine[2:]] and rest["next"] is None
    assert alice.get("/api/runs/", {"search": "EXTRA 1"}).json()["count"] == 1
    assert alice.get("/api/runs/", {"kind": "eccv"}).json()["count"] == 0
    staff = as_user(world, "staff").get("/api/runs/", {"kind": "eccv"}).json()
    assert [r["id"] for r in staff["results"]] == [world["run_b"].pk]
    bad = alice.get("/api/runs/", {"kind": "nonsense"})
    assert bad.status_code == 400 and bad.json()["field"] == "kind"
    assert as_user(world, "nobody").get("/api/runs/").status_code == 403
    # One URL, two operations: each method keeps its own permission (GET view, POST act).
    vic = as_user(world, "vic")
    assert vic.get("/api/runs/").status_code == 200 and vic.options("/api/runs/").status_code == 200
    create = {"dataset": world["run_a"].dataset_id, "project": world["a"].pk}
    assert vic.post("/api/runs/", create, format="json").status_code == 403
    assert alice.post("/api/runs/", create, format="json").status_code == 201
    detail = alice.get(f"/api/runs/{world['run_a'].pk}/")
    check(schema, "/api/runs/{run_id}/", "get", detail)
    assert detail.json()["name"] == "alpha run"
    assert alice.get(f"/api/runs/{world['run_b'].pk}/").status_code == 404  # not hers


def test_batches_jobs_and_datasets(world, schema):  # noqa: F811
    alice = as_user(world, "alice")
    run_a, batch_a = world["run_a"], world["batch_a"]
    response = alice.get(f"/api/runs/{run_a.pk}/batches/")
    check(schema, "/api/runs/{run_id}/batches/", "get", response)
    [row] = response.json()["results"]
    assert row["id"] == batch_a.pk and row["hits"] == batch_a.hits.count() > 0
    assert alice.get(f"/api/runs/{run_a.pk}/batches/", {"status": "draft"}).json()["count"] == 0
    assert alice.get(f"/api/runs/{world['run_b'].pk}/batches/").status_code == 404
    response = alice.get(f"/api/batches/{batch_a.pk}/")
    check(schema, "/api/batches/{batch_id}/", "get", response)
    assert response.json()["stage"] == batch_a.stage
    other = Batch.objects.filter(run=world["run_b"]).first()
    hidden = alice.get(f"/api/batches/{other.pk}/")
    assert hidden.status_code == 404  # not hers: not found
    check(schema, "/api/batches/{batch_id}/", "get", hidden)  # {"error": ...} as documented

    response = alice.get("/api/jobs/", {"state": JobState.RUNNING})
    check(schema, "/api/jobs/", "get", response)
    assert [j["id"] for j in response.json()["results"]] == [world["job_a"].pk]
    imported = Job.objects.create(name="dataset.import", state=JobState.SUCCEEDED)
    names = {j["id"] for j in alice.get("/api/jobs/").json()["results"]}
    assert imported.pk in names and world["job_b"].pk not in names  # imports are shared

    response = alice.get("/api/datasets/")
    check(schema, "/api/datasets/", "get", response)
    [row] = response.json()["results"]
    dataset = Dataset.objects.get(pk=row["id"])
    assert row["images"] == dataset.images.count() > 0
    assert row["captions"] == dataset.captions.count() > 0
    assert alice.get("/api/datasets/", {"search": "no such name"}).json()["count"] == 0
    assert as_user(world, "nobody").get("/api/datasets/").status_code == 403


def test_reviews_listed_and_decided_in_bulk(world, schema):  # noqa: F811
    rita = as_user(world, "rita")
    response = rita.get("/api/reviews/", {"status": "open", "sort": "held"})
    check(schema, "/api/reviews/", "get", response)
    mine = sorted(r.pk for r in world["reviews_a"])
    assert sorted(r["id"] for r in response.json()["results"]) == mine
    assert all(r["run"] == world["run_a"].pk for r in response.json()["results"])
    assert as_user(world, "vic").get("/api/reviews/").status_code == 403  # viewers: no

    theirs = world["reviews_b"][0].pk
    response = rita.post(
        "/api/reviews/decide/",
        {"reviews": [*mine, theirs], "decision": "reject", "feedback": "gold missed"},
        format="json",
    )
    assert response.status_code == 200
    check(schema, "/api/reviews/decide/", "post", response)
    assert response.json()["decided"] == mine
    assert response.json()["failed"] == {str(theirs): "you may not decide it"}
    assert Review.objects.get(pk=theirs).status == ReviewStatus.OPEN
    assert set(Review.objects.filter(pk__in=mine).values_list("status", flat=True)) == {
        ReviewStatus.REJECTED
    }
    response = rita.post(
        f"/api/reviews/{mine[0]}/reverse/", {"feedback": "appeal upheld"}, format="json"
    )
    assert response.status_code == 200, response.json()
    check(schema, "/api/reviews/{review_id}/reverse/", "post", response)
    assert Review.objects.get(pk=mine[0]).status == ReviewStatus.APPROVED
    again = rita.post(f"/api/reviews/{mine[0]}/reverse/", {"feedback": "x"}, format="json")
    assert again.status_code == 409 and "not rejected" in again.json()["error"]
    assert rita.post(f"/api/reviews/{theirs}/reverse/", {"feedback": "x"}).status_code == 404
    no_reason = rita.post(
        "/api/reviews/decide/", {"reviews": [theirs], "decision": "maybe"}, format="json"
    )
    assert no_reason.status_code == 400 and no_reason.json()["field"] == "decision"


def member(django_user_model, run, name, role):
    user = django_user_model.objects.create_user(name, password="pw")
    ProjectMembership.objects.create(user=user, project=run.project, role=role)
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_batch_actions_from_draft_to_expired(paired_run, schema, django_user_model):  # noqa: F811
    alice = member(django_user_model, paired_run, "alice", ProjectRole.RESEARCHER)
    base = f"/api/runs/{paired_run.pk}/batches/"
    draft = {"stage": BisonStage.SELECTION, "provider": "local", "publish": False}
    response = alice.post(base, draft, format="json")
    assert response.status_code == 201, response.json()
    batch_id = response.json()["id"]
    assert response.json()["status"] == BatchStatus.DRAFT
    assert alice.post(f"/api/batches/{batch_id}/discard/").status_code == 204
    assert not Batch.objects.filter(pk=batch_id).exists()

    batch_id = alice.post(base, draft, format="json").json()["id"]
    response = alice.post(f"/api/batches/{batch_id}/publish/")
    assert response.status_code == 200, response.json()
    check(schema, "/api/batches/{batch_id}/publish/", "post", response)
    assert response.json()["batch"]["status"] == BatchStatus.PUBLISHED
    assert response.json()["job"] is None
    again = alice.post(f"/api/batches/{batch_id}/publish/")
    assert again.status_code == 409  # published already
    check(schema, "/api/batches/{batch_id}/publish/", "post", again)

    batch = Batch.objects.get(pk=batch_id)
    response = alice.post(f"/api/batches/{batch_id}/expire/")
    check(schema, "/api/batches/{batch_id}/expire/", "post", response)
    assert response.json()["status"] == BatchStatus.EXPIRED
    assert not batch.hits.filter(status=HitStatus.OPEN).exists()
    response = alice.post(f"/api/batches/{batch_id}/extend/", {"hours": 2}, format="json")
    check(schema, "/api/batches/{batch_id}/extend/", "post", response)
    assert response.json()["status"] == BatchStatus.PUBLISHED  # offered again
    assert batch.events.filter(action="batch.extended", data__seconds=7200).exists()
    extra = {h.pk: h.extra_assignments for h in batch.hits.filter(status=HitStatus.OPEN)}
    response = alice.post(f"/api/batches/{batch_id}/add-assignments/", {"count": 1}, format="json")
    check(schema, "/api/batches/{batch_id}/add-assignments/", "post", response)
    assert response.json()["hits"] == len(extra) == batch.hits.count() > 0
    for hit in batch.hits.all():
        assert hit.extra_assignments == extra[hit.pk] + 1
    response = alice.post(f"/api/batches/{batch_id}/sync/")
    check(schema, "/api/batches/{batch_id}/sync/", "post", response)
    assert response.json()["changed"] == 0
    bad = alice.post(f"/api/batches/{batch_id}/extend/", {"hours": 0}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "hours"
    # A reviewer may look, not act.
    rita = member(django_user_model, paired_run, "rita", ProjectRole.REVIEWER)
    assert rita.get(f"/api/batches/{batch_id}/").status_code == 200
    assert rita.post(f"/api/batches/{batch_id}/expire/").status_code == 403


def test_simulated_crowd_only_with_debug(paired_run, settings, django_user_model):
    alice = member(django_user_model, paired_run, "alice", ProjectRole.RESEARCHER)
    url = f"/api/runs/{paired_run.pk}/batches/"
    body = {"stage": BisonStage.SELECTION, "provider": "simulated", "publish": False}
    before = Batch.objects.count()
    settings.DEBUG = False
    refused = alice.post(url, body, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "provider"
    assert "DJANGO_DEBUG" in refused.json()["error"]
    assert Batch.objects.count() == before
    settings.DEBUG = True
    assert alice.post(url, body, format="json").status_code == 201


def test_run_job_start_and_unknown_job(world, schema, run_on_commit):  # noqa: F811
    alice = as_user(world, "alice")
    run = world["run_a"]
    Job.objects.filter(run=run).update(state=JobState.SUCCEEDED)
    response = run_on_commit(alice.post, f"/api/runs/{run.pk}/jobs/pairing/")
    assert response.status_code == 202, response.json()
    check(schema, "/api/runs/{run_id}/jobs/{name}/", "post", response)
    job = Job.objects.get(pk=response.json()["id"])
    assert job.state == JobState.SUCCEEDED, job.error
    assert alice.post(f"/api/runs/{run.pk}/jobs/propose/").status_code == 404  # not BISON's
    rita = as_user(world, "rita")
    assert rita.post(f"/api/runs/{run.pk}/jobs/pairing/").status_code == 403


def test_exports_listed_started_and_downloaded_by_token(
    exported,  # noqa: F811
    schema,  # noqa: F811
    django_user_model,
    run_on_commit,
):
    from rest_framework.authtoken.models import Token

    user = django_user_model.objects.create_user("robot", password="pw", is_staff=True)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    run_id = exported.run_id
    response = api.get(f"/api/runs/{run_id}/exports/")
    check(schema, "/api/runs/{run_id}/exports/", "get", response)
    [row] = response.json()["results"]
    assert row["version"] == exported.version and row["manifest"] == exported.manifest
    files = {f["name"]: f["url"] for f in row["files"]}
    assert "manifest.json" in files
    download = api.get(files["manifest.json"])
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment")
    body = b"".join(download.streaming_content)
    assert body == export_file_named(exported, "manifest.json").read_bytes()
    assert api.get(f"/api/exports/{exported.pk}/files/..%2Fsecret").status_code == 404
    response = run_on_commit(api.post, f"/api/runs/{run_id}/exports/")
    assert response.status_code == 202
    check(schema, "/api/runs/{run_id}/exports/", "post", response)
    assert api.get(f"/api/runs/{run_id}/exports/").json()["count"] == 2
    anonymous = APIClient().get(f"/api/runs/{run_id}/exports/")
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Token"


def test_invitation_links_for_researchers_only(
    paired_run,
    schema,  # noqa: F811
    django_user_model,
    settings,
):
    settings.CROWDVL_PUBLIC_URL_SET = False  # links name the host the API was called on
    alice = member(django_user_model, paired_run, "alice", ProjectRole.RESEARCHER)
    url = f"/api/runs/{paired_run.pk}/invitations/"
    response = alice.post(url, {"labels": ["w1@example.org", "w2"]}, format="json")
    assert response.status_code == 201, response.json()
    check(schema, "/api/runs/{run_id}/invitations/", "post", response)
    links = [row["link"] for row in response.json()]
    tokens = sorted(paired_run.invitations.values_list("token", flat=True))
    assert sorted(link.removeprefix("http://testserver/join/").strip("/") for link in links) == (
        tokens
    )
    again = alice.post(url, {"labels": ["W2"]}, format="json").json()  # the same person
    assert [row["id"] for row in again] == [response.json()[1]["id"]]
    listed = alice.get(url)
    check(schema, "/api/runs/{run_id}/invitations/", "get", listed)
    assert listed.json()["count"] == 2
    rita = member(django_user_model, paired_run, "rita", ProjectRole.REVIEWER)
    assert rita.get(url).status_code == 403 and rita.post(url, {"labels": ["x"]}).status_code == 403


def test_simulate_only_simulated_batches_with_debug(
    paired_run,
    schema,  # noqa: F811
    django_user_model,
    settings,
):
    alice = member(django_user_model, paired_run, "alice", ProjectRole.RESEARCHER)
    settings.DEBUG = True
    base = f"/api/runs/{paired_run.pk}/batches/"
    body = {"stage": BisonStage.SELECTION, "items_per_hit": 5}
    draft = {**body, "provider": "local", "publish": False}
    local = alice.post(base, draft, format="json").json()["id"]
    refused = alice.post(f"/api/batches/{local}/simulate/")
    assert refused.status_code == 409 and "local workers" in refused.json()["error"]
    assert alice.post(f"/api/batches/{local}/discard/").status_code == 204
    simulated = alice.post(base, {**body, "provider": "simulated"}, format="json").json()["id"]
    settings.DEBUG = False
    refused = alice.post(f"/api/batches/{simulated}/simulate/")
    assert refused.status_code == 409 and "DJANGO_DEBUG" in refused.json()["error"]
    assert not Batch.objects.get(pk=simulated).hits.filter(assignments__isnull=False).exists()
    settings.DEBUG = True
    response = alice.post(f"/api/batches/{simulated}/simulate/", {"workers": 3}, format="json")
    assert response.status_code == 200, response.json()
    check(schema, "/api/batches/{batch_id}/simulate/", "post", response)
    assert response.json()["batch"]["status"] == BatchStatus.COMPLETED
    assert response.json()["assignments"] == Batch.objects.get(pk=simulated).hits.count()


def test_kill_switch_and_revoking_a_link(paired_run, schema, django_user_model):  # noqa: F811
    alice = member(django_user_model, paired_run, "alice", ProjectRole.RESEARCHER)
    base = f"/api/runs/{paired_run.pk}/batches/"
    batch_id = alice.post(base, {"stage": BisonStage.SELECTION}, format="json").json()["id"]
    wrong = alice.post("/api/stop/", {"run": paired_run.pk, "confirm": "stop"}, format="json")
    assert wrong.status_code == 400 and wrong.json()["field"] == "confirm"
    assert Batch.objects.get(pk=batch_id).status == BatchStatus.PUBLISHED
    everything = alice.post("/api/stop/", {"confirm": "STOP"}, format="json")
    assert everything.status_code == 403  # every run of the installation: staff only
    assert alice.post("/api/mturk/reconcile/").status_code == 403  # the whole account: staff
    response = alice.post("/api/stop/", {"run": paired_run.pk, "confirm": "STOP"}, format="json")
    assert response.status_code == 200, response.json()
    check(schema, "/api/stop/", "post", response)
    assert response.json() == {"stopped": [batch_id], "failed": {}}
    assert Batch.objects.get(pk=batch_id).status == BatchStatus.EXPIRED

    url = f"/api/runs/{paired_run.pk}/invitations/"
    [invitation] = alice.post(url, {"labels": ["w9"]}, format="json").json()
    response = alice.post(f"/api/invitations/{invitation['id']}/revoke/")
    assert response.status_code == 200
    check(schema, "/api/invitations/{invitation_id}/revoke/", "post", response)
    assert response.json()["revoked_at"] is not None
    token = paired_run.invitations.get(pk=invitation["id"]).token
    assert APIClient().get(f"/join/{token}/").status_code in (403, 404, 410)
    rita = member(django_user_model, paired_run, "rita", ProjectRole.REVIEWER)
    assert rita.post(f"/api/invitations/{invitation['id']}/revoke/").status_code == 403


def test_list_queries_do_not_grow_with_the_page(paired_run, admin_user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first = batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    Batch.objects.filter(pk=first.pk).update(status=BatchStatus.PUBLISHED)
    api = APIClient()
    api.force_authenticate(admin_user)
    counts = {}
    for n in (2, 20):
        while Batch.objects.count() < n:  # published copies (no warnings to estimate)
            copy = Batch.objects.get(pk=first.pk)
            copy.pk = None
            copy.save()
        for url in (f"/api/runs/{paired_run.pk}/batches/", "/api/runs/", "/api/jobs/"):
            with CaptureQueriesContext(connection) as queries:
                assert api.get(url).status_code == 200
            counts[(url, n)] = len(queries)
    for url in {u for u, _ in counts}:
        assert counts[(url, 2)] == counts[(url, 20)], counts
