"""The API's OpenAPI 3 schema: generated from the code without warnings, valid, served with
its docs page; token authentication; and one happy path per operation whose response is
checked against the schema for its path, method and status."""

import io
import re

import pytest
import yaml
from django.core.management import call_command
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Job, JobState

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema():
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    return yaml.safe_load(out.getvalue())


def _json_schema(node):
    """An OpenAPI 3.0 schema object as JSON Schema (`nullable` -> a null alternative)."""
    if isinstance(node, list):
        return [_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k not in ("nullable", "readOnly")}
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


def check(schema, path_template, method, response):
    """Validate `response`'s JSON body against the schema's answer for it (KeyError if the
    schema does not document that status)."""
    operation = schema["paths"][path_template][method]
    media = operation["responses"][str(response.status_code)]["content"]["application/json"]
    root = {
        "components": {"schemas": _json_schema(schema["components"]["schemas"])},
        **_json_schema(media["schema"]),
    }
    Draft202012Validator(root).validate(response.json())


@pytest.fixture
def api(django_user_model):
    user = django_user_model.objects.create_user("robot", password="pw", is_staff=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_schema_is_valid_and_served_with_its_docs(schema, admin_client):
    assert schema["openapi"].startswith("3.")
    operations = {(p, m) for p, ops in schema["paths"].items() for m in ops}
    assert ("/api/runs/", "post") in operations and ("/api/jobs/{job_id}/", "get") in operations
    assert admin_client.get("/api/schema/").status_code == 200
    docs = admin_client.get("/api/docs/").content.decode()
    assert "swagger-ui" in docs and "cdn" not in docs.lower()  # served from the installation


def test_the_checker_rejects_a_body_that_does_not_match(schema, api, paired_run):
    job = Job.objects.create(name="bison.export", run=paired_run, state=JobState.PENDING)
    response = api.get(f"/api/jobs/{job.pk}/")
    check(schema, "/api/jobs/{job_id}/", "get", response)
    response.json = lambda: {"id": "not a number", "state": 3}
    with pytest.raises(ValidationError):
        check(schema, "/api/jobs/{job_id}/", "get", response)


def test_tokens_authenticate_and_a_bad_one_is_refused(api, paired_run, capsys):
    assert api.get(f"/api/runs/{paired_run.pk}/summary/").status_code == 200
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    refused = stranger.get(f"/api/runs/{paired_run.pk}/summary/")
    assert refused.status_code == 401 and "Invalid token" in refused.json()["detail"]
    assert refused["WWW-Authenticate"] == "Token"
    call_command("api_token", "robot")
    key = capsys.readouterr().out.strip()
    assert re.fullmatch(r"[0-9a-f]{40}", key)
    call_command("api_token", "robot", "--rotate")
    assert capsys.readouterr().out.strip() != key


def test_happy_paths_match_the_schema(schema, api, dataset, paired_run, tmp_path):
    response = api.post("/api/runs/", {"dataset": dataset.pk, "kind": "bison"}, format="json")
    assert response.status_code == 201
    check(schema, "/api/runs/", "post", response)
    run_id = response.json()["id"]
    response = api.post(f"/api/runs/{run_id}/pairing/", {"seed": 1, "dim": 12}, format="json")
    assert response.status_code == 202, response.json()
    check(schema, "/api/runs/{run_id}/pairing/", "post", response)
    response = api.get(f"/api/runs/{paired_run.pk}/summary/")
    check(schema, "/api/runs/{run_id}/summary/", "get", response)
    response = api.post(
        f"/api/runs/{paired_run.pk}/batches/",
        {"stage": BisonStage.SELECTION, "provider": "local", "reward": "0.60"},
        format="json",
    )
    assert response.status_code == 201, response.json()
    check(schema, "/api/runs/{run_id}/batches/", "post", response)
    job = Job.objects.create(name="bison.export", run=paired_run, state=JobState.PENDING)
    response = api.post(f"/api/jobs/{job.pk}/cancel/")
    check(schema, "/api/jobs/{job_id}/cancel/", "post", response)
    response = api.post(f"/api/jobs/{job.pk}/resume/")
    assert response.status_code == 409  # a cancelled job: the error body is documented too
    check(schema, "/api/jobs/{job_id}/resume/", "post", response)
    response = api.post("/api/runs/", {"dataset": 10**9}, format="json")
    assert response.status_code == 400
    check(schema, "/api/runs/", "post", response)
    response = api.get("/api/run-kinds/")
    assert response.status_code == 200
    check(schema, "/api/run-kinds/", "get", response)


def test_dataset_import_upload_matches_the_schema(schema, api, sample_path, run_on_commit):
    with open(sample_path, "rb") as fh:
        response = run_on_commit(
            api.post, "/api/datasets/import/", {"file": fh, "name": "uploaded"}, format="multipart"
        )
    assert response.status_code == 202, response.json()
    check(schema, "/api/datasets/import/", "post", response)
    job = Job.objects.get(pk=response.json()["id"])
    assert job.state == JobState.SUCCEEDED, job.error
    assert job.result["images"] == 462 and job.result["captions"] == 2312


def test_every_operation_has_a_response_checked_against_the_schema(schema):
    """Each operation of the schema appears in some test as `check(schema, path, method,
    ...)` (JSON answers) or in BINARY_OPERATIONS (files, checked byte for byte)."""
    from pathlib import Path

    sources = "".join(p.read_text() for p in Path(__file__).resolve().parents[1].rglob("test_*.py"))
    called = set(re.findall(r'check\(\s*schema,\s*"([^"]+)",\s*"(\w+)"', sources))
    operations = {(p, m) for p, ops in schema["paths"].items() for m in ops}
    missing = operations - called - BINARY_OPERATIONS - NO_BODY_OPERATIONS
    assert not missing, f"operations without a schema-checked response: {sorted(missing)}"


BINARY_OPERATIONS = {
    ("/api/exports/{export_id}/files/{name}", "get"),
    ("/api/exports/{export_id}/bundle/", "get"),  # pages/exports/test_views_files.py
    ("/api/batches/{batch_id}/panel/bonuses.csv", "get"),  # crowd/panel/test_batch_views.py
}
# 204 No Content (tested for its status and effect).
NO_BODY_OPERATIONS = {("/api/batches/{batch_id}/discard/", "post")}


def test_the_schema_and_docs_are_for_signed_in_users_unless_opened(
    api, client, settings, django_user_model
):
    viewer = APIClient()
    viewer.force_login(django_user_model.objects.create_user("viewer", password="pw"))
    for url in ("/api/schema/", "/api/docs/"):
        assert client.get(url).status_code == 401
        assert APIClient().get(url, HTTP_AUTHORIZATION="Token nope").status_code == 401
        assert api.get(url).status_code == 200  # a token
        assert viewer.get(url).status_code == 200  # a session, no project needed
    settings.CROWDVL_PUBLIC_API_DOCS = True
    for url in ("/api/schema/", "/api/docs/"):
        assert client.get(url).status_code == 200
