"""The script of docs/console-and-api.md runs a COCO-BISON run end to end through the API
only, against a live server (HTTP, token auth), and what it downloads is the run's export."""

import json
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    Batch,
    BatchStatus,
    Dataset,
    Export,
    Project,
    ProjectMembership,
    ProjectRole,
    Run,
)
from pipeline.bison import parse_bison_annotations
from tests.annotation.api.test_schema import check, schema  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import api_bison_run  # noqa: E402

pytestmark = [pytest.mark.long, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def token(django_user_model):
    user = django_user_model.objects.create_user("robot", password="pw", is_staff=True)
    return Token.objects.create(user=user).key


def test_script_runs_bison_from_upload_to_download(
    live_server,
    token,
    settings,
    tmp_path,
    schema,  # noqa: F811
):
    settings.DEBUG = True  # the simulated crowd is offered only with DEBUG on
    lines = []
    out = tmp_path / "out"
    result = api_bison_run.main(
        [
            "--url",
            live_server.url,
            "--token",
            token,
            "--provider",
            "simulated",
            "--out",
            str(out),
            "--poll",
            "0.05",
            "--name",
            "via-api",
        ],
        log=lines.append,
    )
    run = Run.objects.get(pk=result["run"])
    assert run.name == "via-api" and run.owner.username == "robot"
    stages = dict(Batch.objects.filter(run=run).values_list("stage", "status"))
    assert stages == {
        BisonStage.SELECTION: BatchStatus.COMPLETED,
        BisonStage.VERIFICATION: BatchStatus.COMPLETED,
    }
    export = Export.objects.get(run=run)
    folder = Path(export.path)
    folder = folder if folder.is_dir() else folder.parent
    # Every file of the version, data/*.parquet included (the API lists them since issue 31).
    downloaded = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert downloaded == sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
    )
    assert any(name.startswith("data/") for name in downloaded)
    for name in downloaded:  # byte for byte what the server holds
        assert (out / name).read_bytes() == (folder / name).read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sha256"] == export.checksum and manifest["records"] > 0
    assert manifest["stage1"]["pairs"] > 0 and manifest["stage3"]["workers"] >= 2
    assert any("export v1" in line for line in lines), lines

    # The downloaded annotations score a model through the API as well.
    records = parse_bison_annotations((folder / Path(export.path).name).read_bytes(), file="x")
    perfect = [{"bison_id": r.bison_id, "predicted_image_id": r.true_image_id} for r in records]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    body = {"export": export.pk, "predictions": perfect}
    response = api.post("/api/bison/evaluate/", body, format="json")
    assert response.status_code == 200, response.json()
    check(schema, "/api/bison/evaluate/", "post", response)
    assert response.json() == {
        "accuracy": 1.0,
        "correct": len(records),
        "total": len(records),
        "missing": 0,
        "unknown": 0,
    }


def test_script_says_what_went_wrong(live_server, token, settings, tmp_path):
    settings.DEBUG = False
    with pytest.raises(api_bison_run.ApiError, match="DJANGO_DEBUG"):
        api_bison_run.main(
            ["--url", live_server.url, "--token", token, "--provider", "simulated"],
            log=lambda line: None,
        )
    # Asked before anything is done: no dataset or run is left behind (issue 27).
    assert not Dataset.objects.exists() and not Run.objects.exists()
    with pytest.raises(api_bison_run.ApiError, match="HTTP 401"):
        api_bison_run.main(
            ["--url", live_server.url, "--token", "0" * 40, "--provider", "simulated"],
            log=lambda _: None,
        )
    # Its arguments first: local workers need their invitations before anything is made.
    with pytest.raises(SystemExit):
        api_bison_run.main(["--url", live_server.url, "--token", token], log=lambda _: None)
    assert not Dataset.objects.exists() and not Run.objects.exists()


def test_publishing_waits_while_the_server_fetches_the_images(monkeypatch):
    """Under `make serve` the image job runs beside the request: publishing right after
    creating the batch is refused ("still being fetched") until it ends; the script waits."""
    answers = [
        api_bison_run.ApiError("POST ...: HTTP 409: 462 of 462 images are still being fetched"),
        api_bison_run.ApiError("POST ...: HTTP 409: 3 of 462 images are still being fetched"),
        {"batch": {"id": 7, "status": "published"}, "job": None},
    ]
    calls = []

    def call(self, method, path, body=None, **kwargs):
        calls.append((method, path))
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(api_bison_run.Api, "call", call)
    api = api_bison_run.Api("http://x", "t", log=lambda _: None)
    assert api.publish(7, timeout=5, poll=0)["status"] == "published"
    assert calls == [("POST", "/api/batches/7/publish/")] * 3
    answers[:] = [api_bison_run.ApiError("POST ...: HTTP 409: over the budget")]
    with pytest.raises(api_bison_run.ApiError, match="budget"):  # other refusals: at once
        api.publish(7, timeout=5, poll=0)


def test_the_offered_crowds_are_listed_for_scripts(token, settings, schema):  # noqa: F811
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    settings.DEBUG = False
    response = client.get("/api/providers/")
    check(schema, "/api/providers/", "get", response)
    names = [p["name"] for p in response.json()]
    assert "local" in names and "simulated" not in names
    settings.DEBUG = True
    assert "simulated" in [p["name"] for p in client.get("/api/providers/").json()]


@pytest.fixture
def alice(django_user_model):
    """A researcher of "Vision lab" only, as docs/console-and-api.md makes her: no member of
    the Default project, where a run made without a project goes."""
    user = django_user_model.objects.create_user("alice", password="pw")
    lab = Project.objects.create(name="Vision lab")
    ProjectMembership.objects.create(project=lab, user=user, role=ProjectRole.RESEARCHER)
    return Token.objects.create(user=user).key


def test_a_project_the_user_may_not_use_is_refused_before_anything_is_imported(
    live_server, alice, settings
):
    """Issue 46: without --project the script imported the dataset, then the run was refused
    (403 in the Default project) and the dataset stayed behind."""
    settings.DEBUG = True
    watched = Project.objects.create(name="Watched")
    ProjectMembership.objects.create(
        project=watched, user=User.objects.get(username="alice"), role=ProjectRole.VIEWER
    )
    for project in ([], ["--project", "Watched"], ["--project", str(watched.pk)]):
        argv = ["--url", live_server.url, "--token", alice, "--provider", "simulated", *project]
        with pytest.raises(api_bison_run.ApiError, match=r"give --project.*\(Vision lab\)"):
            api_bison_run.main(argv, log=lambda _: None)
    assert not Dataset.objects.exists() and not Run.objects.exists()


def test_the_script_takes_its_project_by_name_or_id(live_server, alice):
    api = api_bison_run.Api(live_server.url, alice, log=lambda _: None)
    lab = Project.objects.get(name="Vision lab")
    assert api_bison_run.choose_project(api, "Vision lab")["id"] == lab.pk
    assert api_bison_run.choose_project(api, str(lab.pk))["name"] == "Vision lab"
    with pytest.raises(api_bison_run.ApiError, match="project 'Nowhere'"):
        api_bison_run.choose_project(api, "Nowhere")


def test_the_projects_are_listed_with_whether_runs_may_be_made_there(
    alice,
    schema,  # noqa: F811
):
    Project.objects.create(name="Another lab")  # not hers: not listed
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {alice}")
    response = client.get("/api/projects/")
    check(schema, "/api/projects/", "get", response)
    listed = {
        p["name"]: (p["default"], p["role"], p["may_create_runs"])
        for p in response.json()["results"]
    }
    assert listed == {"Default": (True, None, False), "Vision lab": (False, "researcher", True)}
