"""The script of docs/console-and-api.md runs a COCO-BISON run end to end through the API
only, against a live server (HTTP, token auth), and what it downloads is the run's export."""

import json
import sys
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Batch, BatchStatus, Export, Run, Stage
from pipeline.bison import parse_bison_annotations
from tests.annotation.test_api_schema import check, schema  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import api_bison_run  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


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
        Stage.BISON_SELECTION: BatchStatus.COMPLETED,
        Stage.BISON_VERIFICATION: BatchStatus.COMPLETED,
    }
    export = Export.objects.get(run=run)
    folder = Path(export.path)
    folder = folder if folder.is_dir() else folder.parent
    downloaded = sorted(p.name for p in out.iterdir())
    assert downloaded == sorted(p.name for p in folder.iterdir() if p.is_file())
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
    with pytest.raises(api_bison_run.ApiError, match="HTTP 401"):
        api_bison_run.main(["--url", live_server.url, "--token", "0" * 40], log=lambda _: None)
